"""Reads behind the API's list endpoints: runs, steps, a group's grader runs and verdicts."""

from __future__ import annotations

from django.db.models import Count, Prefetch, QuerySet

from grading.models import CandidateGrade, GraderRun, Run, Step


def runs_for_api() -> QuerySet[Run]:
    return Run.objects.annotate(
        n_steps=Count("steps", distinct=True), n_groups=Count("steps__groups", distinct=True)
    ).order_by("pk")


def steps_for_api(*, run_name: str) -> QuerySet[Step]:
    """Steps of a run, oldest first; raises Run.DoesNotExist."""
    run = Run.objects.get(name=run_name)
    return (
        Step.objects.filter(run=run)
        .select_related("run")
        .annotate(n_groups=Count("groups"))
        .order_by("number")
    )


def grader_runs_for_api(*, group_id: int, config_name: str | None = None) -> QuerySet[GraderRun]:
    qs = (
        GraderRun.objects.filter(group_id=group_id)
        .select_related("config")
        .defer("verdict", "alias_map")
        .order_by("config__name", "replica", "pk")
    )
    if config_name:
        qs = qs.filter(config__name=config_name)
    return qs


def verdicts_for_api(*, group_id: int, config_name: str | None = None) -> QuerySet[GraderRun]:
    """Succeeded runs of a group with their per-attempt grades (two queries)."""
    qs = (
        GraderRun.objects.filter(group_id=group_id, status=GraderRun.Status.SUCCEEDED)
        .select_related("config")
        .prefetch_related(
            Prefetch(
                "grades",
                queryset=CandidateGrade.objects.select_related("attempt").order_by(
                    "tier", "rank_in_tier", "attempt__index"
                ),
            )
        )
        .order_by("config__name", "replica", "pk")
    )
    if config_name:
        qs = qs.filter(config__name=config_name)
    return qs
