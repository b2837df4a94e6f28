"""Store method §4 advantages per group from the latest succeeded verdict (writes).

`group_advantages_refresh` brings the stored `GroupAdvantages` of some groups up to date with
their grading state: a group whose latest succeeded grader run (or, without one, whose fallback
reason) differs from what is stored is recomputed with `grading.advantages.redistribute`; the rest
is left alone, so calling it on every fetch costs two reads when nothing changed. Rows are written
with one upsert on the natural key, so concurrent refreshes of a group write the same values.
"""

from __future__ import annotations

import hashlib
import json
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from django.db import transaction
from django.utils import timezone

from grading.advantages import (
    DEFAULT_COEFFICIENTS,
    DEFAULT_LAMBDA_MAX,
    AttemptInput,
    AttemptStatus,
    CoefficientConfig,
    redistribute,
)
from grading.models import Attempt, CandidateGrade, GraderConfig, GroupAdvantages
from grading.selectors.training import GradingState, grading_states
from grading.services.data_version import data_changed

Reason = GroupAdvantages.FallbackReason


@dataclass(frozen=True)
class AdvantageParams:
    """Everything besides the verdict that changes the numbers; part of a row's natural key."""

    lambda_max: float | None = DEFAULT_LAMBDA_MAX
    coefficients: CoefficientConfig = field(default_factory=lambda: DEFAULT_COEFFICIENTS)
    normalize_std: bool = False
    std_ddof: int = 0
    std_eps: float = 1e-6

    def __post_init__(self) -> None:
        # Fail at the boundary (API, command) rather than inside a refresh: same checks as the math.
        redistribute(
            [],
            lambda_max=self.lambda_max,
            coefficient_config=self.coefficients,
            std_ddof=self.std_ddof,
            std_eps=self.std_eps,
        )

    def as_json(self) -> dict[str, Any]:
        c = self.coefficients
        return {
            "lambda_max": self.lambda_max,
            "coefficients": {
                "t1_best": c.t1_best,
                "t1_other": c.t1_other,
                "t2_first": c.t2_first,
                "t2_last": c.t2_last,
                "t3": c.t3,
            },
            "normalize_std": self.normalize_std,
            # ddof and ε only matter when normalizing; leaving them out keeps one key for GRPO.
            **({"std_ddof": self.std_ddof, "std_eps": self.std_eps} if self.normalize_std else {}),
        }

    @property
    def key(self) -> str:
        canonical = json.dumps(self.as_json(), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(canonical.encode()).hexdigest()


DEFAULT_PARAMS = AdvantageParams()


@dataclass(frozen=True)
class _Target:
    run_id: int | None
    reason: str


def _target(state: GradingState) -> _Target:
    return _Target(state.run_id, "" if state.run_id else state.reason)


def _is_fresh(stored: Mapping[str, Any], target: _Target) -> bool:
    if target.run_id is not None:
        # Graded, or an invalid verdict of that same run: both are final for that run.
        return bool(stored["grader_run_id"] == target.run_id)
    return stored["grader_run_id"] is None and stored["fallback_reason"] == target.reason


def group_advantages_refresh(
    *,
    group_ids: Iterable[int],
    config: GraderConfig,
    params: AdvantageParams = DEFAULT_PARAMS,
) -> int:
    """Recompute the stale rows of these groups; returns how many were written."""
    ids = list(group_ids)
    if not ids:
        return 0
    states = grading_states(group_ids=ids, config=config)
    stored = {
        row["group_id"]: row
        for row in GroupAdvantages.objects.filter(
            group_id__in=ids, config=config, params_hash=params.key
        ).values("group_id", "grader_run_id", "fallback_reason")
    }
    targets = {gid: _target(states[gid]) for gid in ids}
    stale = [gid for gid in ids if gid not in stored or not _is_fresh(stored[gid], targets[gid])]
    if not stale:
        return 0

    attempts: dict[int, list[Attempt]] = defaultdict(list)
    for attempt in (
        Attempt.objects.filter(group_id__in=stale)
        .only("id", "group_id", "external_id", "index", "status", "test_reward")
        .order_by("group_id", "index")
    ):
        attempts[attempt.group_id].append(attempt)
    run_ids = [t.run_id for gid in stale if (t := targets[gid]).run_id is not None]
    grades: dict[int, dict[int, tuple[int, int]]] = defaultdict(dict)
    for run_id, attempt_id, tier, rank in CandidateGrade.objects.filter(
        run_id__in=run_ids
    ).values_list("run_id", "attempt_id", "tier", "rank_in_tier"):
        grades[run_id][attempt_id] = (tier, rank)

    now = timezone.now()
    rows = [
        _compute(
            group_id=gid,
            attempts=attempts[gid],
            target=targets[gid],
            grades=grades.get(targets[gid].run_id or 0, {}),
            config=config,
            params=params,
            now=now,
        )
        for gid in stale
    ]
    with transaction.atomic():
        data_changed()
        GroupAdvantages.objects.bulk_create(
            rows,
            update_conflicts=True,
            unique_fields=["group", "config", "params_hash"],
            update_fields=[f for f in _UPDATED_FIELDS],
        )
    return len(rows)


_UPDATED_FIELDS = (
    "params",
    "grader_run",
    "fallback",
    "fallback_reason",
    "n_attempts",
    "n_valid",
    "mean_reward",
    "reward_std",
    "lambda_raw",
    "lambda_applied",
    "capped",
    "mean_shift",
    "positive_total_before",
    "positive_total_after",
    "attempts",
    "computed_at",
)


def _compute(
    *,
    group_id: int,
    attempts: list[Attempt],
    target: _Target,
    grades: dict[int, tuple[int, int]],
    config: GraderConfig,
    params: AdvantageParams,
    now: Any,
) -> GroupAdvantages:
    reason = target.reason
    if target.run_id is not None and any(a.passed and a.pk not in grades for a in attempts):
        # The verdict does not cover every passer (it cannot happen with a validated verdict,
        # but a partial verdict must never silently become GRPO-with-holes).
        reason = Reason.INVALID_VERDICT
    fallback = reason != ""
    inputs = [
        AttemptInput(
            status=_status(a.status),
            reward=a.test_reward,
            tier=None if fallback else grades.get(a.pk, (None, None))[0],
            rank=None if fallback else grades.get(a.pk, (None, None))[1],
        )
        for a in attempts
    ]
    result = redistribute(
        inputs,
        lambda_max=params.lambda_max,
        coefficient_config=params.coefficients,
        normalize_std=params.normalize_std,
        std_ddof=params.std_ddof,
        std_eps=params.std_eps,
        fallback=fallback,
    )
    per_attempt = [
        {
            "attempt_id": a.pk,
            "attempt_external_id": a.external_id,
            "attempt_index": a.index,
            "status": a.status,
            "included": out.included,
            "test_reward": a.test_reward,
            "reward_used": out.reward_used,
            "tier": inp.tier if a.passed else None,
            "rank_in_tier": inp.rank if a.passed else None,
            "coefficient": out.coefficient,
            "adv_grpo": out.adv_grpo,
            "adv_gagar": out.adv_gagar,
            "reward_equivalent": out.reward_equivalent,
        }
        for a, inp, out in zip(attempts, inputs, result.attempts, strict=True)
    ]
    return GroupAdvantages(
        group_id=group_id,
        config=config,
        params_hash=params.key,
        params=params.as_json(),
        grader_run_id=target.run_id if reason in ("", Reason.INVALID_VERDICT) else None,
        fallback=fallback,
        fallback_reason=reason,
        n_attempts=len(attempts),
        n_valid=result.n_valid,
        mean_reward=result.mean_reward,
        reward_std=result.reward_std,
        lambda_raw=result.lambda_raw,
        lambda_applied=result.lambda_applied,
        capped=result.capped,
        mean_shift=result.mean_shift,
        positive_total_before=result.positive_total_before,
        positive_total_after=result.positive_total_after,
        attempts=per_attempt,
        computed_at=now,
    )


def _status(value: str) -> AttemptStatus:
    if value == Attempt.Status.INFRA_FAILED:
        return "infra_failed"
    if value == Attempt.Status.EXPLOIT_CONFIRMED:
        return "exploit_confirmed"
    return "valid"
