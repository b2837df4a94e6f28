"""Reads behind the API's list endpoints: runs, steps, a group's grader runs and verdicts.

A group's grader runs and verdicts come as `gagar.v2` rows (the encoding of the exports): ids
are strings, the bundle's ids are the join keys (database ids are extra `*_db_id` fields), and
a tier is an integer 1–3 or null with an `exploit` boolean beside it.
"""

from __future__ import annotations

from typing import Any

from django.db.models import Count, Prefetch, QuerySet

from grading.grader.verdict import map_aliases
from grading.models import Attempt, CandidateGrade, GraderRun, Group, Run, Step
from grading.selectors.gate import grader_fit_artefact
from grading.selectors.training import group_key


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


def group_for_api(*, group_db_id: int) -> Group:
    """Raises Group.DoesNotExist."""
    return Group.objects.select_related("step__run", "task").get(pk=group_db_id)


def group_head(*, group: Group) -> dict[str, Any]:
    """The keys that lead a group's grader-run and verdict lists (`gagar.v2`)."""
    run, step, task_id = group.step.run.name, group.step.number, group.task.external_id
    return {
        "run": run,
        "step": step,
        "task_id": task_id,
        "group_id": group_key(external_id=group.external_id, run=run, step=step, task_id=task_id),
        "group_db_id": group.pk,
    }


def grader_run_row(run: GraderRun, head: dict[str, Any]) -> dict[str, Any]:
    config = run.config
    return {
        "grader_run_id": str(run.pk),
        "group_id": head["group_id"],
        "group_db_id": head["group_db_id"],
        "config": config.name,
        "backend": config.backend,
        "model": config.model,
        # The prompt the run really used (a run not started yet: its configuration's).
        "prompt_version": run.prompt_version or config.prompt_version,
        "temperature": config.temperature,
        "seed": config.seed,
        "replica": run.replica,
        "status": run.status,
        "deliveries": run.deliveries,
        "created_at": run.created_at,
        "started_at": run.started_at,
        "finished_at": run.finished_at,
        "failure_reason": run.failure_reason,
        "problems": [str(p) for p in run.problems or []],
        "latency_s": run.latency_s,
        "input_tokens": run.input_tokens,
        "output_tokens": run.output_tokens,
        "llm_calls": run.llm_calls,
        "tool_calls": run.tool_calls,
        "cost_usd": float(run.cost_usd) if run.cost_usd is not None else None,
        "fit_version": run.fit_version,
    }


def _grade_row(g: CandidateGrade) -> dict[str, Any]:
    a = g.attempt
    return {
        "attempt_id": a.external_id,
        "attempt_db_id": a.pk,
        "attempt_index": a.index,
        "tier": g.tier,
        "exploit_suspected": g.exploit_suspected,
        "exploit": a.status == Attempt.Status.EXPLOIT_CONFIRMED,
        "rank_in_tier": g.rank_in_tier,
        "weighted_score": g.weighted_score,
        "scores": g.scores,
        "severe_issues": g.severe_issues,
        "summary": g.summary,
    }


def verdict_row(
    run: GraderRun, head: dict[str, Any], external_ids: dict[str, str]
) -> dict[str, Any]:
    """A succeeded run with its grades; the verdict document's candidates (stored by attempt
    database id) are named by the bundle's attempt ids, like every other `gagar.v2` row."""
    config = run.config
    return {
        "grader_run_id": str(run.pk),
        "group_id": head["group_id"],
        "group_db_id": head["group_db_id"],
        "config": config.name,
        "model": config.model,
        "prompt_version": run.prompt_version or config.prompt_version,
        "replica": run.replica,
        "finished_at": run.finished_at,
        "fit_version": run.fit_version,
        "grades": [_grade_row(g) for g in run.grades.all()],
        "verdict": _by_bundle_ids(run.verdict, external_ids) if run.verdict else None,
        "analysis_fit": grader_fit_artefact(config=config, version=run.fit_version),
    }


def _by_bundle_ids(document: dict[str, Any], external_ids: dict[str, str]) -> dict[str, Any]:
    filled = {"candidates": {}, "ordering": [], "evidence": {}, **document}
    named = map_aliases(filled, external_ids)
    return {k: v for k, v in named.items() if k in document}


def attempt_external_ids(*, group_id: int) -> dict[str, str]:
    """Attempt database id (as the verdict document's keys spell it) → the bundle's id."""
    return {
        str(pk): ext
        for pk, ext in Attempt.objects.filter(group_id=group_id).values_list("pk", "external_id")
    }
