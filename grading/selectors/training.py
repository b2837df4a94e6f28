"""Reads for the training loop: grading state per group, stored advantages as `gagar.v2` rows,
and the λ-cap report per run and step."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Literal

from django.db.models import Avg, Count, Q, QuerySet

from grading.domain.advantage_columns import (
    ATTEMPT_COLUMNS,
    ATTEMPT_OWN_COLUMNS,
    GROUP_COLUMNS,
    KEY_NAMES,
    LAMBDA_CAP_COLUMNS,
    SCHEMA_VERSION,
)
from grading.models import GraderConfig, GraderRun, GroupAdvantages, Step

__all__ = [
    "ATTEMPT_COLUMNS",
    "GROUP_COLUMNS",
    "LAMBDA_CAP_COLUMNS",
    "SCHEMA_VERSION",
]

GradingStatus = Literal["graded", "pending", "failed", "never_requested"]


@dataclass(frozen=True)
class GradingState:
    status: GradingStatus
    # The latest succeeded run when graded.
    run_id: int | None

    @property
    def reason(self) -> str:
        return "" if self.status == "graded" else self.status


def grading_states(*, group_ids: Iterable[int], config: GraderConfig) -> dict[int, GradingState]:
    """Per group, for one configuration: graded by the latest succeeded run (any replica), else
    pending while a run is pending or running, else failed, else never requested. One query."""
    ids = list(group_ids)
    runs: dict[int, list[tuple[int, str, Any]]] = {gid: [] for gid in ids}
    for group_id, run_id, status, finished_at in GraderRun.objects.filter(
        group_id__in=ids, config=config
    ).values_list("group_id", "id", "status", "finished_at"):
        runs[group_id].append((run_id, status, finished_at))
    states: dict[int, GradingState] = {}
    for gid, items in runs.items():
        succeeded = [(f, rid) for rid, s, f in items if s == GraderRun.Status.SUCCEEDED]
        if succeeded:
            # Latest verdict wins; the id breaks ties between runs finished at the same instant.
            _, run_id = max(succeeded, key=lambda x: (x[0] is not None, x[0] or 0, x[1]))
            states[gid] = GradingState("graded", run_id)
        elif any(s in (GraderRun.Status.PENDING, GraderRun.Status.RUNNING) for _, s, _ in items):
            states[gid] = GradingState("pending", None)
        elif items:
            states[gid] = GradingState("failed", None)
        else:
            states[gid] = GradingState("never_requested", None)
    return states


def step_group_ids(*, run_name: str, step_number: int) -> list[int]:
    """Group ids of a step, in a stable order; raises Step.DoesNotExist."""
    step = Step.objects.select_related("run").get(run__name=run_name, number=step_number)
    return list(step.groups.order_by("id").values_list("id", flat=True))


def grader_config_by_name(*, name: str) -> GraderConfig:
    return GraderConfig.objects.get(name=name)


def advantages_for_groups(
    *, group_ids: Iterable[int], config: GraderConfig, params_hash: str
) -> QuerySet[GroupAdvantages]:
    """Stored advantages with everything their rows need, in one query."""
    return (
        GroupAdvantages.objects.filter(
            group_id__in=list(group_ids), config=config, params_hash=params_hash
        )
        .select_related("group__step__run", "group__task", "grader_run", "config")
        .order_by("group_id")
    )


def advantages_of_run(
    *, run_name: str, step: int | None, config: GraderConfig, params_hash: str
) -> QuerySet[GroupAdvantages]:
    qs = GroupAdvantages.objects.filter(
        group__step__run__name=run_name, config=config, params_hash=params_hash
    )
    if step is not None:
        qs = qs.filter(group__step__number=step)
    return qs.select_related("group__step__run", "group__task", "grader_run", "config")


def group_key(*, external_id: str | None, run: str, step: int, task_id: str) -> str:
    """A group's join key: its external id, or `<run>/<step>/<task>` (what the client sends)."""
    return external_id or f"{run}/{step}/{task_id}"


def group_row(ga: GroupAdvantages) -> dict[str, Any]:
    """The per-group `gagar.v2` row (grading/domain/advantage_columns.py)."""
    group = ga.group
    run, step, task_id = group.step.run.name, group.step.number, group.task.external_id
    return {
        "run": run,
        "step": step,
        "task_id": task_id,
        "group_id": group_key(external_id=group.external_id, run=run, step=step, task_id=task_id),
        "group_db_id": group.pk,
        "grader_config": ga.config.name,
        "verdict_id": str(ga.grader_run_id) if ga.grader_run_id and not ga.fallback else None,
        "grader_model": ga.config.model or ga.config.backend,
        "prompt_version": (
            ga.grader_run.prompt_version
            if ga.grader_run is not None and ga.grader_run.prompt_version
            else ga.config.prompt_version
        ),
        "lambda_max": ga.params.get("lambda_max"),
        "normalize_std": bool(ga.params.get("normalize_std")),
        "fallback": ga.fallback,
        "fallback_reason": ga.fallback_reason,
        "n_attempts": ga.n_attempts,
        "n_valid": ga.n_valid,
        "mean_reward": ga.mean_reward,
        "reward_std": ga.reward_std,
        "lambda_raw": ga.lambda_raw,
        "lambda_applied": ga.lambda_applied,
        "capped": ga.capped,
        "mean_shift": ga.mean_shift,
        "positive_total_before": ga.positive_total_before,
        "positive_total_after": ga.positive_total_after,
    }


def _attempt_own(stored: dict[str, Any]) -> dict[str, Any]:
    # Stored rows keep the database id under attempt_id (their v1 shape); v2 keys on the
    # bundle's id and keeps the database id as an extra column.
    own = {
        **stored,
        "attempt_id": str(stored["attempt_external_id"]),
        "attempt_db_id": stored["attempt_id"],
        "exploit": stored["status"] == "exploit_confirmed",
    }
    return {k: own[k] for k in ATTEMPT_OWN_COLUMNS}


def attempt_rows(ga: GroupAdvantages, head: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """The per-attempt `gagar.v2` rows: the attempt's own values plus its group's columns."""
    head = head if head is not None else group_row(ga)
    keys = {k: head[k] for k in KEY_NAMES}
    rest = {k: head[k] for k in GROUP_COLUMNS if k not in KEY_NAMES}
    return [{**keys, **_attempt_own(a), **rest} for a in ga.attempts]


def lambda_cap_report(
    *, run_name: str | None = None, step: int | None = None
) -> list[dict[str, Any]]:
    """How often λ_max bound, per run, step, configuration and parameters, with the mean shift.

    `capped_share` is over the groups that have a λ (a passer above the mean and a verdict);
    `mean_shift_capped` averages the shift over the groups where the cap bound (it is 0 elsewhere).
    """
    qs = GroupAdvantages.objects.all()
    if run_name is not None:
        qs = qs.filter(group__step__run__name=run_name)
    if step is not None:
        qs = qs.filter(group__step__number=step)
    rows = (
        qs.values("group__step__run__name", "group__step__number", "config__name", "params_hash")
        .annotate(
            groups=Count("id"),
            fallback_groups=Count("id", filter=Q(fallback=True)),
            with_lambda=Count("id", filter=Q(lambda_raw__isnull=False, fallback=False)),
            capped_groups=Count("id", filter=Q(capped=True)),
            mean_shift_capped=Avg("mean_shift", filter=Q(capped=True)),
            mean_lambda_raw=Avg("lambda_raw", filter=Q(fallback=False)),
        )
        .order_by("group__step__run__name", "group__step__number", "config__name")
    )
    params = dict(
        GroupAdvantages.objects.filter(params_hash__in={r["params_hash"] for r in rows})
        .values_list("params_hash", "params")
        .distinct()
    )
    return [
        {
            "run": r["group__step__run__name"],
            "step": r["group__step__number"],
            "grader_config": r["config__name"],
            "lambda_max": params.get(r["params_hash"], {}).get("lambda_max"),
            "groups": r["groups"],
            "fallback_groups": r["fallback_groups"],
            "groups_with_lambda": r["with_lambda"],
            "capped_groups": r["capped_groups"],
            "capped_share": r["capped_groups"] / r["with_lambda"] if r["with_lambda"] else None,
            "mean_shift_capped": r["mean_shift_capped"],
            "mean_lambda_raw": r["mean_lambda_raw"],
        }
        for r in rows
    ]
