"""Reads for the staff ops page: grader run backlog and grader latency."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.db.models import Count, Q, Sum
from django.utils import timezone

from grading.models import Attempt, GraderRun, Group, GroupAdvantages, Task

# Latency is measured over the most recent succeeded runs, at most this many.
LATENCY_SAMPLE = 500


def percentile(sorted_values: Sequence[float], q: float) -> float | None:
    """Linear interpolation between closest ranks (numpy's default); None for no values."""
    if not sorted_values:
        return None
    position = (len(sorted_values) - 1) * q
    low, high = math.floor(position), math.ceil(position)
    if low == high:
        return float(sorted_values[low])
    weight = position - low
    return float(sorted_values[low] * (1 - weight) + sorted_values[high] * weight)


@dataclass(frozen=True)
class GraderLatency:
    runs: int  # how many succeeded runs the figures cover
    p50_s: float | None
    p95_s: float | None
    max_s: float | None


def grader_latency(*, sample: int = LATENCY_SAMPLE) -> GraderLatency:
    recent = (
        GraderRun.objects.filter(status=GraderRun.Status.SUCCEEDED, latency_s__isnull=False)
        .order_by("-finished_at")
        .values_list("latency_s", flat=True)[:sample]
    )
    latencies = sorted(float(value) for value in recent if value is not None)
    return GraderLatency(
        runs=len(latencies),
        p50_s=percentile(latencies, 0.50),
        p95_s=percentile(latencies, 0.95),
        max_s=latencies[-1] if latencies else None,
    )


@dataclass(frozen=True)
class RunBacklog:
    by_status: dict[str, int]  # pending / running only (the partial index serves this)
    stale_running: int  # running with no heartbeat for GAGAR_GRADER_STALE_AFTER_S
    failed_last_24h: int
    succeeded_last_24h: int


def run_backlog(*, stale_after_s: float) -> RunBacklog:
    now = timezone.now()
    active = GraderRun.objects.filter(
        status__in=[GraderRun.Status.PENDING, GraderRun.Status.RUNNING]
    )
    counts = dict(active.values_list("status").annotate(n=Count("id")).order_by())
    stale = active.filter(
        status=GraderRun.Status.RUNNING,
        heartbeat_at__lt=now - timedelta(seconds=stale_after_s),
    ).count()
    recent = dict(
        GraderRun.objects.filter(
            status__in=[GraderRun.Status.SUCCEEDED, GraderRun.Status.FAILED],
            finished_at__gte=now - timedelta(hours=24),
        )
        .values_list("status")
        .annotate(n=Count("id"))
        .order_by()
    )
    return RunBacklog(
        by_status={status: int(counts.get(status, 0)) for status in ("pending", "running")},
        stale_running=stale,
        failed_last_24h=int(recent.get(GraderRun.Status.FAILED, 0)),
        succeeded_last_24h=int(recent.get(GraderRun.Status.SUCCEEDED, 0)),
    )


# Upper bounds of the run-duration histogram, in seconds (a run waits on a model: s to min).
DURATION_BUCKETS = (1.0, 5.0, 15.0, 30.0, 60.0, 120.0, 300.0, 600.0, 1800.0)


@dataclass(frozen=True)
class ConfigFigures:
    runs_by_status: dict[str, int]
    input_tokens: int
    output_tokens: int
    cost_usd: float
    duration_buckets: list[tuple[float, int]]  # cumulative counts per upper bound, +Inf last
    duration_sum_s: float
    duration_count: int
    advantage_groups: int
    fallback_groups: int


def metrics_figures() -> dict[str, ConfigFigures]:
    """Per grader configuration: runs by status, tokens and cost, durations of finished runs
    (as a cumulative histogram) and the advantage fallback share. A few aggregate queries."""
    status_rows = GraderRun.objects.values_list("config__name", "status").annotate(n=Count("id"))
    totals = GraderRun.objects.values("config__name").annotate(
        inp=Sum("input_tokens"), out=Sum("output_tokens"), cost=Sum("cost_usd")
    )
    bucket_aggs = {
        f"le_{i}": Count("id", filter=Q(latency_s__lte=b)) for i, b in enumerate(DURATION_BUCKETS)
    }
    durations = (
        GraderRun.objects.filter(latency_s__isnull=False)
        .values("config__name")
        .annotate(n=Count("id"), total=Sum("latency_s"), **bucket_aggs)
    )
    advantages = GroupAdvantages.objects.values("config__name").annotate(
        n=Count("id"), fallback=Count("id", filter=Q(fallback=True))
    )
    names = {r["config__name"] for r in totals} | {r["config__name"] for r in advantages}
    by_status: dict[str, dict[str, int]] = {n: {} for n in names}
    for name, status, n in status_rows:
        by_status.setdefault(name, {})[status] = n
    tot: dict[str, dict[str, Any]] = {r["config__name"]: dict(r) for r in totals}
    dur: dict[str, dict[str, Any]] = {r["config__name"]: dict(r) for r in durations}
    adv: dict[str, dict[str, Any]] = {r["config__name"]: dict(r) for r in advantages}
    empty: dict[str, Any] = {}
    out = {}
    for name in sorted(names):
        t, d, a = tot.get(name, empty), dur.get(name, empty), adv.get(name, empty)
        n_dur = int(d.get("n") or 0)
        out[name] = ConfigFigures(
            runs_by_status=by_status.get(name, {}),
            input_tokens=int(t.get("inp") or 0),
            output_tokens=int(t.get("out") or 0),
            cost_usd=float(t.get("cost") or 0),
            duration_buckets=[
                *((b, int(d.get(f"le_{i}") or 0)) for i, b in enumerate(DURATION_BUCKETS)),
                (math.inf, n_dur),
            ],
            duration_sum_s=float(d.get("total") or 0.0),
            duration_count=n_dur,
            advantage_groups=int(a.get("n") or 0),
            fallback_groups=int(a.get("fallback") or 0),
        )
    return out


def import_volume() -> dict[str, int]:
    """How much has been imported: tasks, groups, attempts."""
    return {
        "tasks": Task.objects.count(),
        "groups": Group.objects.count(),
        "attempts": Attempt.objects.count(),
    }
