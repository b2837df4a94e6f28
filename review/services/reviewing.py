"""Labels, fix requests, submission and disagreement flags."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import Count, Q
from django.utils import timezone

from grading.models import GraderRun
from grading.services.data_version import data_changed
from review.models import Assignment, Candidate, Disagreement, FixRequest, Label
from review.models.reviewing import CRITERIA
from review.services.diff_checks import fix_anchor_check
from review.services.reveal import verdict_to_reveal
from review.services.timing import assignment_clock_advance
from review.submission import CandidateDraft, Problem, submission_problem_items

LABEL_FIELDS = (
    "tier",
    "rank_in_tier",
    *CRITERIA,
    "mergeability",
    "confidence",
    "notes",
    "prefilled",
)


class LockedError(ValidationError):
    pass


class StaleLabelError(ValidationError):
    """The label was saved (from another tab or window) after the page asking to save it was
    filled: that page's form is out of date and would write its old values over the new."""


@dataclass(frozen=True)
class LabelBase:
    """The stored label a page's label form was filled from: when it was saved, None if the
    candidate had no label yet."""

    updated_at: datetime | None


class SubmissionError(ValidationError):
    """The group cannot be submitted yet: every problem, each with its candidate and field."""

    def __init__(self, problems: list[Problem]) -> None:
        super().__init__([p.text for p in problems])
        self.problems = problems


def check_open(assignment: Assignment) -> None:
    if assignment.status != Assignment.Status.IN_PROGRESS:
        raise LockedError("This review is submitted or expired and can no longer change.")


def label_save(
    *,
    candidate: Candidate,
    values: Mapping[str, Any],
    now: datetime | None = None,
    base: LabelBase | None = None,
) -> Label:
    """Autosave: write the given fields (already cleaned by the form) of one candidate's label.

    With `base` (the label the page's form was filled from), a label saved since then is left
    as it is and StaleLabelError says why: the page sends its whole form, so its out-of-date
    values (a blank rank, no pre-filled marks, old notes) would otherwise replace the newer
    ones saved from another tab or window of the same review.
    """
    moment = now or timezone.now()
    unknown = set(values) - set(LABEL_FIELDS)
    if unknown:
        raise ValidationError(f"Unknown fields: {', '.join(sorted(unknown))}")
    with transaction.atomic():
        assignment = Assignment.objects.select_for_update().select_related("campaign")
        locked = assignment.get(pk=candidate.assignment_id)
        check_open(locked)
        if base is not None:
            _check_base(candidate, base)
        label, _ = Label.objects.get_or_create(candidate=candidate, defaults={"updated_at": moment})
        for field, value in values.items():
            setattr(label, field, value)
        # A pre-filled criterion without a score is not pre-filled any more.
        label.prefilled = [c for c in label.prefilled if getattr(label, c) is not None]
        if label.tier == Label.Tier.EXPLOIT:
            # An exploit is not ranked; a stale rank would only confuse the export.
            label.rank_in_tier = None
        label.updated_at = moment
        label.save()
        locked.expires_at = moment + timedelta(minutes=locked.campaign.lease_minutes)
        locked.save(update_fields=["expires_at"])
    return label


def _check_base(candidate: Candidate, base: LabelBase) -> None:
    """Inside label_save's transaction: the assignment row is locked, so no save of this
    candidate's label comes between this read and the write."""
    stored = Label.objects.filter(candidate=candidate).values_list("updated_at", flat=True).first()
    if stored != base.updated_at:
        raise StaleLabelError(
            f"Candidate {candidate.alias}'s label was saved from another tab or window after "
            "this page loaded, so this change was not saved (it would have undone that one). "
            "Reload the page to see the saved label, then make the change again."
        )


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
    """A line-anchored fix request, stamped with the active time spent on this candidate so far.

    The anchor must be a line the reviewer was shown (file in the diff, side it has, line that
    exists); anything else is refused with the reason, so an export never holds a dead anchor.
    """
    moment = now or timezone.now()
    with transaction.atomic():
        assignment = assignment_clock_advance(assignment_id=candidate.assignment_id, now=moment)
        check_open(assignment)
        fix_anchor_check(candidate=candidate, path=path, line=line, side=side)
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


def assignment_problems(*, assignment: Assignment) -> list[Problem]:
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
                key=c.token,
            )
        )
    return submission_problem_items(drafts, rubric_required=assignment.campaign.rubric_required)


def review_submit(*, assignment: Assignment, now: datetime | None = None) -> Assignment:
    """Validate the whole group, then lock it. Raises ValidationError listing every problem."""
    moment = now or timezone.now()
    with transaction.atomic():
        locked = assignment_clock_advance(assignment_id=assignment.pk, now=moment)
        check_open(locked)
        problems = assignment_problems(assignment=locked)
        if problems:
            raise SubmissionError(problems)
        locked.status = Assignment.Status.SUBMITTED
        locked.submitted_at = moment
        locked.focus_active = False
        locked.save(update_fields=["status", "submitted_at", "focus_active"])
        data_changed()
    return locked


class NothingToFlagError(ValidationError):
    """No revealed verdict to disagree with (not submitted, campaign never reveals, no run)."""


def disagreement_flag(
    *,
    candidate: Candidate,
    note: str,
    grader_run: GraderRun | None = None,
    now: datetime | None = None,
) -> Disagreement:
    """Flag the revealed verdict on one candidate for adjudication, once, with a reason.

    A second flag of the same verdict is refused (it would silently replace the first one that
    staff may already be reading); `grader_run`, when given, must be the revealed run.
    """
    assignment = candidate.assignment
    run = verdict_to_reveal(assignment=assignment)
    if run is None or (grader_run is not None and grader_run.pk != run.pk):
        raise NothingToFlagError("There is no revealed grader verdict to disagree with.")
    if assignment.status != Assignment.Status.SUBMITTED:
        raise ValidationError("Disagreements can be flagged only after submission.")
    reason = note.strip()
    if not reason:
        raise ValidationError("Say why you disagree: staff adjudicate from your reason.")
    with transaction.atomic():
        if (
            Disagreement.objects.select_for_update()
            .filter(candidate=candidate, grader_run=run)
            .exists()
        ):
            raise ValidationError(f"You already flagged {candidate.alias} for adjudication.")
        return Disagreement.objects.create(
            candidate=candidate,
            grader_run=run,
            note=reason[:5000],
            created_at=now or timezone.now(),
        )
