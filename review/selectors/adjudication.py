"""Reads for the adjudication pages (staff): the flag queue and one case with its evidence.

A case is shown as the flagging reviewer saw it (their aliases, their campaign's redaction), so
the adjudicator judges the change rather than the agent that wrote it; provenance stays in the
admin.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.db.models import Count, Q, QuerySet

from grading.models import CandidateGrade
from review.blinded_cache import assignment_redactor, rendered_diffs
from review.diffs import RenderedFile
from review.models import Assignment, Disagreement, Label
from review.presenters import grade_summary


def disagreement_queue(
    *, status: str | None = Disagreement.Status.OPEN, campaign_id: int | None = None
) -> QuerySet[Disagreement]:
    qs = Disagreement.objects.select_related(
        "candidate__assignment__campaign",
        "candidate__assignment__reviewer",
        "candidate__assignment__group__task",
        "candidate__assignment__group__step__run",
        "grader_run__config",
        "resolved_by",
    )
    if status:
        qs = qs.filter(status=status)
    if campaign_id is not None:
        qs = qs.filter(candidate__assignment__campaign_id=campaign_id)
    return qs.order_by("status", "created_at", "pk")


def disagreement_counts() -> dict[str, int]:
    row = Disagreement.objects.aggregate(
        open=Count("pk", filter=Q(status=Disagreement.Status.OPEN)),
        resolved=Count("pk", filter=Q(status=Disagreement.Status.RESOLVED)),
    )
    return {"open": row["open"], "resolved": row["resolved"]}


@dataclass
class HumanLabel:
    reviewer: str
    flagged_by: bool  # the reviewer who raised this flag
    label: Label
    fix_requests: int
    blocking: int


@dataclass
class AdjudicationCase:
    flag: Disagreement
    alias: str
    problem_statement: str
    files: list[RenderedFile]
    grade: dict[str, Any] | None
    humans: list[HumanLabel]
    other_flags: list[Disagreement]


def adjudication_case(*, disagreement_id: int) -> AdjudicationCase:
    """Raises Disagreement.DoesNotExist for an unknown id."""
    flag = disagreement_queue(status=None).get(pk=disagreement_id)
    candidate = flag.candidate
    assignment = candidate.assignment
    redactor = assignment_redactor(assignment=assignment)
    attempt = candidate.attempt
    files = rendered_diffs(
        patches={candidate.token: attempt.patch}, redactor=redactor, task=assignment.group.task
    )[candidate.token]
    alias_of = {c.attempt_id: c.alias for c in assignment.candidates.all()}
    grade = CandidateGrade.objects.filter(run=flag.grader_run, attempt=attempt).first()
    labels = (
        Label.objects.filter(
            candidate__attempt=attempt,
            candidate__assignment__status=Assignment.Status.SUBMITTED,
            candidate__assignment__sentinel=False,
        )
        .select_related("candidate__assignment__reviewer")
        .annotate(
            n_fix=Count("candidate__fix_requests"),
            n_blocking=Count(
                "candidate__fix_requests", filter=Q(candidate__fix_requests__severity="blocking")
            ),
        )
        .order_by("candidate__assignment__submitted_at", "pk")
    )
    humans = [
        HumanLabel(
            reviewer=lb.candidate.assignment.reviewer.get_username(),
            flagged_by=lb.candidate_id == candidate.pk,
            label=lb,
            fix_requests=lb.n_fix,
            blocking=lb.n_blocking,
        )
        for lb in labels
    ]
    others = list(
        disagreement_queue(status=None).filter(candidate__attempt=attempt).exclude(pk=flag.pk)
    )
    return AdjudicationCase(
        flag=flag,
        alias=candidate.alias,
        problem_statement=redactor(assignment.group.task.problem_statement),
        files=files,
        grade=grade_summary(grade, flag.grader_run, alias_of, redactor) if grade else None,
        humans=humans,
        other_flags=others,
    )
