"""Reads of grader runs: a group's grading status per configuration, grades, transcripts.

Grading status of (group, configuration), across its replicas:
- `graded`: at least one run succeeded; its grades are the group's (lowest replica wins).
- `pending`: no run succeeded yet and one is pending or running.
- `failed`: every run finished and none succeeded: the group falls back to plain GRPO
  (every coefficient 1) and `reason` says why.
- `not_requested`: no run for this configuration: also a fallback (method §4).
`fallback` is true for `failed` and `not_requested`; a pending group has no verdict *yet*.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from django.db import models
from django.db.models import QuerySet

from grading.models import CandidateGrade, GraderConfig, GraderEvent, GraderRun, Group


class GradingState(models.TextChoices):
    GRADED = "graded"
    PENDING = "pending"
    FAILED = "failed"
    NOT_REQUESTED = "not_requested"


@dataclass(frozen=True)
class GroupGrading:
    group_id: int
    state: GradingState
    run: GraderRun | None  # the succeeded run used, else the latest one
    reason: str = ""
    grades: dict[int, CandidateGrade] = field(default_factory=dict)  # by attempt id

    @property
    def fallback(self) -> bool:
        return self.state in (GradingState.FAILED, GradingState.NOT_REQUESTED)


def _status_of(group_id: int, runs: Sequence[GraderRun]) -> GroupGrading:
    if not runs:
        return GroupGrading(group_id, GradingState.NOT_REQUESTED, None, "grading was not requested")
    done = sorted(
        (r for r in runs if r.status == GraderRun.Status.SUCCEEDED), key=lambda r: r.replica
    )
    if done:
        run = done[0]
        grades = {g.attempt_id: g for g in run.grades.all()}
        return GroupGrading(group_id, GradingState.GRADED, run, grades=grades)
    latest = max(runs, key=lambda r: (r.created_at, r.pk))
    unfinished = [
        r for r in runs if r.status in (GraderRun.Status.PENDING, GraderRun.Status.RUNNING)
    ]
    if unfinished:
        return GroupGrading(group_id, GradingState.PENDING, unfinished[0])
    return GroupGrading(group_id, GradingState.FAILED, latest, latest.failure_reason or "failed")


def groups_grading_status(
    *, groups: Iterable[Group | int], config: GraderConfig
) -> dict[int, GroupGrading]:
    """Status of many groups for one configuration in two queries (runs, then their grades)."""
    ids = [g if isinstance(g, int) else g.pk for g in groups]
    by_group: dict[int, list[GraderRun]] = defaultdict(list)
    runs = (
        GraderRun.objects.filter(group_id__in=ids, config=config)
        .defer("verdict", "alias_map", "problems")
        .prefetch_related("grades")
    )
    for run in runs:
        by_group[run.group_id].append(run)
    return {gid: _status_of(gid, by_group.get(gid, [])) for gid in ids}


def group_grading_status(*, group: Group | int, config: GraderConfig) -> GroupGrading:
    return groups_grading_status(groups=[group], config=config)[
        group if isinstance(group, int) else group.pk
    ]


def grader_runs_for_group(*, group: Group | int) -> QuerySet[GraderRun]:
    """Every run of a group, all configurations and replicas (stability studies keep them all)."""
    gid = group if isinstance(group, int) else group.pk
    return (
        GraderRun.objects.filter(group_id=gid)
        .select_related("config")
        .order_by("config__name", "replica")
    )


def grader_run_transcript(*, run: GraderRun) -> QuerySet[GraderEvent]:
    return GraderEvent.objects.filter(run=run).order_by("seq")
