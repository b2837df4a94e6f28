"""What grader runs spend: tokens and money of every delivery, and the daily limits per
configuration.

A run's transcript is discarded when a delivery is abandoned (a lost worker, a transient error, a
re-grade of a failed run) so that the next one starts clean; what those calls cost is moved onto
the run first (`abandoned_*`), so nothing spent is ever forgotten. Daily limits count today's
model calls of the configuration (finished or running runs) plus today's abandoned deliveries.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime, time
from decimal import Decimal

from django.db import transaction
from django.db.models import F, Sum
from django.utils import timezone

from grading.grader.backends.base import Delivery
from grading.grader.inputs import Pricing
from grading.models import GraderConfig, GraderEvent, GraderRun

Kind = GraderEvent.Kind


def _usd(value: float) -> Decimal:
    return Decimal(str(round(value, 6)))


def abandon_events(*, run_id: int) -> None:
    """Move the cost of the run's current transcript onto the run, then delete the transcript."""
    with transaction.atomic():
        spent = GraderEvent.objects.filter(run_id=run_id, kind=Kind.LLM_CALL).aggregate(
            i=Sum("input_tokens"), o=Sum("output_tokens"), c=Sum("cost_usd")
        )
        GraderRun.objects.filter(pk=run_id).update(
            abandoned_input_tokens=F("abandoned_input_tokens") + (spent["i"] or 0),
            abandoned_output_tokens=F("abandoned_output_tokens") + (spent["o"] or 0),
            abandoned_cost_usd=F("abandoned_cost_usd") + (spent["c"] or Decimal(0)),
        )
        GraderEvent.objects.filter(run_id=run_id).delete()


def record_abandoned(*, run_id: int, deliveries: Sequence[Delivery], pricing: Pricing) -> None:
    """Add HTTP deliveries of a failed call (they never became a transcript event)."""
    tokens_in = sum(d.input_tokens for d in deliveries)
    tokens_out = sum(d.output_tokens for d in deliveries)
    if not (tokens_in or tokens_out):
        return
    GraderRun.objects.filter(pk=run_id).update(
        abandoned_input_tokens=F("abandoned_input_tokens") + tokens_in,
        abandoned_output_tokens=F("abandoned_output_tokens") + tokens_out,
        abandoned_cost_usd=F("abandoned_cost_usd") + _usd(pricing.cost(tokens_in, 0, tokens_out)),
    )


def run_cost(used_usd: float, abandoned_usd: Decimal) -> Decimal:
    return _usd(used_usd) + abandoned_usd


def config_spend_today(config: GraderConfig) -> tuple[int, Decimal]:
    """(tokens, USD) the configuration spent since midnight (the server's time zone)."""
    midnight = timezone.make_aware(datetime.combine(timezone.localdate(), time.min))
    calls = GraderEvent.objects.filter(
        run__config=config, kind=Kind.LLM_CALL, created_at__gte=midnight
    ).aggregate(i=Sum("input_tokens"), o=Sum("output_tokens"), c=Sum("cost_usd"))
    lost = GraderRun.objects.filter(config=config, started_at__gte=midnight).aggregate(
        i=Sum("abandoned_input_tokens"),
        o=Sum("abandoned_output_tokens"),
        c=Sum("abandoned_cost_usd"),
    )
    tokens = sum(v or 0 for v in (calls["i"], calls["o"], lost["i"], lost["o"]))
    usd = (calls["c"] or Decimal(0)) + (lost["c"] or Decimal(0))
    return tokens, usd


def daily_spend_check(
    config: GraderConfig, pricing: Pricing
) -> Callable[[int, float], str | None] | None:
    """The loop's check before each call, or None when the configuration has no daily limit."""
    max_tokens, max_usd = config.max_tokens_per_day, config.max_usd_per_day
    if max_tokens is None and max_usd is None:
        return None

    def check(next_tokens: int, next_usd: float) -> str | None:
        tokens, usd = config_spend_today(config)
        if max_tokens is not None and tokens + next_tokens > max_tokens:
            return (
                f"configuration {config.name!r} has used {tokens:,} of its {max_tokens:,} tokens "
                f"today; the next call may need {next_tokens:,}"
            )
        if max_usd is not None and pricing.known and usd + _usd(next_usd) > max_usd:
            return (
                f"configuration {config.name!r} has spent ${usd:.4f} of its ${max_usd} today; "
                f"the next call may cost ${next_usd:.4f}"
            )
        return None

    return check
