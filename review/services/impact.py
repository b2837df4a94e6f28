"""Score a campaign's groups by RL impact (grading.domain.rl_impact) for its queue (writes).

Each group's score comes from its stored advantages (`GroupAdvantages`): the campaign's impact
configuration's row, else the group's latest graded row, with the default advantage parameters
either way, and the confidence its verdict states. A group's score is recomputed only when the
row it came from changed (another row, or the same row recomputed), so the queue calls this on
every request for the cost of two reads when nothing changed. Groups without graded advantages
get no score and go after the scored ones.
"""

from __future__ import annotations

from typing import Any, cast

from django.db import transaction

from grading.advantages import AttemptInput, AttemptStatus, CoefficientConfig
from grading.domain.rl_impact import RLImpact, rl_impact
from grading.models import GroupAdvantages
from grading.services.advantages import DEFAULT_PARAMS
from review.models import Campaign, CampaignGroup

_STATUSES: dict[str, AttemptStatus] = {
    "valid": "valid",
    "infra_failed": "infra_failed",
    "exploit_confirmed": "exploit_confirmed",
}


def _inputs(rows: list[dict[str, Any]]) -> list[AttemptInput]:
    return [
        AttemptInput(
            status=_STATUSES.get(r["status"], "valid"),
            reward=float(r["test_reward"]),
            tier=r.get("tier"),
            rank=r.get("rank_in_tier"),
        )
        for r in rows
    ]


def _impact(row: dict[str, Any]) -> RLImpact | None:
    params = row["params"]
    coefficients = params.get("coefficients") or {}
    confidence = row["grader_run__verdict__confidence"]
    return rl_impact(
        _inputs(row["attempts"]),
        confidence=float(confidence) if isinstance(confidence, int | float) else None,
        lambda_max=params.get("lambda_max"),
        coefficient_config=CoefficientConfig(**coefficients),
        normalize_std=bool(params.get("normalize_std")),
        std_ddof=int(params.get("std_ddof", 0)),
        std_eps=float(params.get("std_eps", 1e-6)),
    )


def _detail(row: dict[str, Any], impact: RLImpact | None) -> dict[str, Any]:
    if impact is None:
        return {"reason": "the stored advantages hold no grader tiers"}
    return {
        "config_id": row["config_id"],
        "grader_run_id": row["grader_run_id"],
        "fragility": impact.fragility,
        "uncertainty": impact.uncertainty,
        "confidence": None if impact.uncertainty is None else 1 - impact.uncertainty,
        "decisive_moves": impact.decisive_moves,
        "moves": len(impact.moves),
        "largest_shift": impact.largest_shift,
    }


def campaign_impact_refresh(*, campaign: Campaign) -> int:
    """Bring the campaign's RL-impact scores up to date; returns how many groups changed."""
    entries = list(CampaignGroup.objects.filter(campaign=campaign).order_by("pk"))
    rows = GroupAdvantages.objects.filter(
        group_id__in=[e.group_id for e in entries],
        fallback=False,
        params_hash=DEFAULT_PARAMS.key,
    )
    if campaign.impact_config_id is not None:
        rows = rows.filter(config_id=campaign.impact_config_id)
    latest: dict[int, dict[str, Any]] = {}
    for values in rows.order_by("group_id", "-computed_at", "-pk").values(
        "pk",
        "group_id",
        "config_id",
        "grader_run_id",
        "computed_at",
        "params",
        "attempts",
        "grader_run__verdict__confidence",
    ):
        latest.setdefault(values["group_id"], cast("dict[str, Any]", values))
    changed: list[CampaignGroup] = []
    for entry in entries:
        row = latest.get(entry.group_id)
        source = f"{row['pk']}:{row['computed_at'].isoformat()}" if row else ""
        if source == entry.impact_source and (row or entry.impact_detail):
            continue
        if row is None:
            entry.impact, entry.impact_detail = None, {"reason": "no graded advantages stored"}
        else:
            impact = _impact(row)
            entry.impact = impact.score if impact is not None else None
            entry.impact_detail = _detail(row, impact)
        entry.impact_source = source
        changed.append(entry)
    if changed:
        with transaction.atomic():
            CampaignGroup.objects.bulk_update(
                changed, ["impact", "impact_detail", "impact_source"], batch_size=500
            )
    return len(changed)
