"""Labels, fix requests, submission and disagreement flags."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any

from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import Count, Q
from django.utils import timezone

from grading.models import GraderRun
from review.models import Assignment, Candidate, Disagreement, FixRequest, Label
from review.models.reviewing import CRITERIA
from review.services.timing import assignment_clock_advance
from review.submission import CandidateDraft, submission_problems

LABEL_FIELDS = ("tier", "rank_in_tier", *CRITERIA, "mergeability", "confidence", "notes")


class LockedError(ValidationError):
    pass


def check_open(assignment: Assignment) -> None:
    if assignment.status != Assignment.Status.IN_PROGRESS:
        raise LockedError("This review is submitted or expired and can no longer change.")


def label_save(
    *, candidate: Candidate, values: Mapping[str, Any], now: datetime | None = None
) -> Label:
    """Autosave: write the given fields (already cleaned by the form) of one candidate's label."""
    moment = now or timezone.now()
    unknown = set(values) - set(LABEL_FIELDS)
    if unknown:
        raise ValidationError(f"Unknown fields: {', '.join(sorted(unknown))}")
    with transaction.atomic():
        assignment = Assignment.objects.select_for_update().select_related("campaign")
        locked = assignment.get(pk=candidate.assignment_id)
        check_open(locked)
        label, _ = Label.objects.get_or_create(candidate=candidate, defaults={"updated_at": moment})
        for field, value in values.items():
            setattr(label, field, value)
        if label.tier == Label.Tier.EXPLOIT:
            # An exploit is not ranked; a stale rank would only confuse the export.
            label.rank_in_tier = None
        label.updated_at = moment
        label.save()
        locked.expires_at = moment + timedelta(minutes=locked.campaign.lease_minutes)
        locked.save(update_fields=["expires_at"])
    return label


def fix_request_create(
    *,
    candidate: Candidate,
    path: str,
    line: int,
    side: str,
    text: str,
    severity: str,
    criterion: str = "",
    now: datetime | None = None,
) -> FixRequest:
    """A line-anchored fix request, stamped with the active time spent on this candidate so far."""
    moment = now or timezone.now()
    with transaction.atomic():
        assignment = assignment_clock_advance(assignment_id=candidate.assignment_id, now=moment)
        check_open(assignment)
        spent = Candidate.objects.values_list("active_ms", flat=True).get(pk=candidate.pk)
        return FixRequest.objects.create(
            candidate=candidate,
            path=path,
            line=line,
            side=side,
            text=text,
            severity=severity,
            criterion=criterion,
            active_ms_before=spent,
            created_at=moment,
        )


def fix_request_delete(*, fix_request: FixRequest) -> None:
    with transaction.atomic():
        assignment = Assignment.objects.select_for_update().get(
            pk=fix_request.candidate.assignment_id
        )
        check_open(assignment)
        fix_request.delete()


def assignment_problems(*, assignment: Assignment) -> list[str]:
    candidates = (
        Candidate.objects.filter(assignment=assignment)
        .select_related("label")
        .annotate(blocking=Count("fix_requests", filter=Q(fix_requests__severity="blocking")))
        .order_by("position")
    )
    drafts = []
    for c in candidates:
        label = getattr(c, "label", None)
        drafts.append(
            CandidateDraft(
                alias=c.alias,
                tier=label.tier if label else "",
                rank=label.rank_in_tier if label else None,
                scores=[getattr(label, f) if label else None for f in CRITERIA],
                mergeability=label.mergeability if label else "",
                blocking_fix_requests=c.blocking,
            )
        )
    return submission_problems(drafts, rubric_required=assignment.campaign.rubric_required)


def review_submit(*, assignment: Assignment, now: datetime | None = None) -> Assignment:
    """Validate the whole group, then lock it. Raises ValidationError listing every problem."""
    moment = now or timezone.now()
    with transaction.atomic():
        locked = assignment_clock_advance(assignment_id=assignment.pk, now=moment)
        check_open(locked)
        problems = assignment_problems(assignment=locked)
        if problems:
            raise ValidationError(problems)
        locked.status = Assignment.Status.SUBMITTED
        locked.submitted_at = moment
        locked.focus_active = False
        locked.save(update_fields=["status", "submitted_at", "focus_active"])
    return locked


def disagreement_flag(
    *, candidate: Candidate, grader_run: GraderRun, note: str, now: datetime | None = None
) -> Disagreement:
    if candidate.assignment.status != Assignment.Status.SUBMITTED:
        raise ValidationError("Disagreements can be flagged only after submission.")
    flag, _ = Disagreement.objects.update_or_create(
        candidate=candidate,
        grader_run=grader_run,
        defaults={"note": note[:5000], "created_at": now or timezone.now()},
    )
    return flag
