"""What a reviewer records: one label per candidate, fix requests, activity, disagreement flags."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q

from grading.domain.reviews_file import CRITERIA
from grading.models import GraderRun
from review.claims import CLAIM_CRITERIA
from review.models.campaigns import Assignment, Candidate

# The rubric a tier typically comes with: choosing a tier pre-fills the criteria not yet set
# (marked pre-filled until the reviewer touches them). One score per criterion per tier.
TIER_TYPICAL_SCORES: dict[str, dict[str, int]] = {
    "t1": dict.fromkeys(CRITERIA, 5),
    "t2": dict.fromkeys(CRITERIA, 4),
    "t3": dict.fromkeys(CRITERIA, 2),
    "exploit": dict.fromkeys(CRITERIA, 1),
}


def _score_check(field: str) -> models.CheckConstraint:
    return models.CheckConstraint(
        condition=Q(**{f"{field}__isnull": True})
        | (Q(**{f"{field}__gte": 1}) & Q(**{f"{field}__lte": 5})),
        name=f"label_{field}_1_5",
    )


class Label(models.Model):
    class Tier(models.TextChoices):
        T1 = "t1", "T1"
        T2 = "t2", "T2"
        T3 = "t3", "T3"
        EXPLOIT = "exploit", "exploit / test tampering"

    class Mergeability(models.TextChoices):
        AS_IS = "as_is", "mergeable as is"
        AFTER_MINOR = "after_minor_fixes", "after minor fixes"
        NOT_MERGEABLE = "not_mergeable", "not mergeable"

    candidate = models.OneToOneField(Candidate, on_delete=models.CASCADE, related_name="label")
    tier = models.CharField(max_length=8, choices=Tier.choices, blank=True)
    rank_in_tier = models.PositiveSmallIntegerField(null=True, blank=True)
    approach_suitability = models.PositiveSmallIntegerField(null=True, blank=True)
    implementation_precision = models.PositiveSmallIntegerField(null=True, blank=True)
    minimality_of_changes = models.PositiveSmallIntegerField(null=True, blank=True)
    unintended_side_effects = models.PositiveSmallIntegerField(null=True, blank=True)
    codebase_consistency = models.PositiveSmallIntegerField(null=True, blank=True)
    mergeability = models.CharField(max_length=20, choices=Mergeability.choices, blank=True)
    confidence = models.PositiveSmallIntegerField(null=True, blank=True)
    notes = models.TextField(blank=True)
    # Criteria whose score is still the tier's typical one, pre-filled and never set or
    # confirmed by the reviewer: per-criterion statistics leave them out (and count them).
    prefilled = models.JSONField(default=list, blank=True)
    updated_at = models.DateTimeField()

    class Meta:
        constraints = [
            models.CheckConstraint(
                condition=Q(tier__in=["", "t1", "t2", "t3", "exploit"]), name="label_tier_known"
            ),
            models.CheckConstraint(
                condition=Q(rank_in_tier__isnull=True) | Q(rank_in_tier__gte=1),
                name="label_rank_positive",
            ),
            models.CheckConstraint(
                condition=Q(mergeability__in=["", "as_is", "after_minor_fixes", "not_mergeable"]),
                name="label_mergeability_known",
            ),
            *[_score_check(c) for c in (*CRITERIA, "confidence")],
        ]

    def __str__(self) -> str:
        return f"label {self.tier or '—'} for candidate {self.candidate_id}"

    @property
    def tier_number(self) -> int | None:
        return {"t1": 1, "t2": 2, "t3": 3}.get(self.tier)


class FixRequest(models.Model):
    class Side(models.TextChoices):
        OLD = "old"
        NEW = "new"

    class Severity(models.TextChoices):
        BLOCKING = "blocking"
        MAJOR = "major"
        MINOR = "minor"
        NIT = "nit"

    candidate = models.ForeignKey(Candidate, on_delete=models.CASCADE, related_name="fix_requests")
    path = models.CharField(max_length=1024)
    line = models.PositiveIntegerField()
    side = models.CharField(max_length=3, choices=Side.choices)
    text = models.TextField()
    severity = models.CharField(max_length=8, choices=Severity.choices)
    criterion = models.CharField(max_length=32, blank=True)
    # Active time on this candidate when the request was written: the "time to find" an issue.
    active_ms_before = models.PositiveBigIntegerField()
    created_at = models.DateTimeField()

    class Meta:
        ordering = ["candidate_id", "created_at", "id"]
        constraints = [
            models.CheckConstraint(condition=Q(line__gte=1), name="fix_request_line_positive"),
            models.CheckConstraint(condition=Q(side__in=["old", "new"]), name="fix_request_side"),
            models.CheckConstraint(
                condition=Q(severity__in=["blocking", "major", "minor", "nit"]),
                name="fix_request_severity_known",
            ),
            models.CheckConstraint(
                condition=Q(criterion__in=["", *CRITERIA]), name="fix_request_criterion_known"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.severity} at {self.path}:{self.line} ({self.side})"


class ActivityEvent(models.Model):
    """The raw focus/visibility/heartbeat stream, kept for audit; timing is derived on arrival."""

    class Kind(models.TextChoices):
        FOCUS = "focus"
        HEARTBEAT = "heartbeat"
        HIDDEN = "hidden"
        IDLE = "idle"

    assignment = models.ForeignKey(Assignment, on_delete=models.CASCADE, related_name="events")
    candidate = models.ForeignKey(
        Candidate, null=True, blank=True, on_delete=models.CASCADE, related_name="+"
    )
    kind = models.CharField(max_length=16, choices=Kind.choices)
    at = models.DateTimeField()

    class Meta:
        ordering = ["assignment_id", "at", "id"]
        constraints = [
            models.CheckConstraint(
                condition=Q(kind__in=["focus", "heartbeat", "hidden", "idle"]),
                name="activity_kind_known",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.kind} at {self.at:%H:%M:%S}"


class Disagreement(models.Model):
    """A reviewer's flag, after reveal, that the grader got a candidate wrong: for adjudication.

    Staff resolve it on the adjudication page with an outcome and, optionally, the tier the
    candidate should have had; the calibrated-labels export carries that tier next to the
    consensus (it never replaces the consensus, which stays the reviewers' own).
    """

    class Status(models.TextChoices):
        OPEN = "open"
        RESOLVED = "resolved"

    class Resolution(models.TextChoices):
        GRADER_RIGHT = "grader_right", "the grader was right"
        REVIEWER_RIGHT = "reviewer_right", "the reviewer was right"
        NEITHER = "neither", "neither was right"
        UNCLEAR = "unclear", "cannot tell"

    candidate = models.ForeignKey(Candidate, on_delete=models.CASCADE, related_name="disagreements")
    grader_run = models.ForeignKey(GraderRun, on_delete=models.CASCADE, related_name="+")
    note = models.TextField(blank=True)
    status = models.CharField(max_length=12, choices=Status.choices, default=Status.OPEN)
    created_at = models.DateTimeField()
    resolution = models.CharField(max_length=16, choices=Resolution.choices, blank=True)
    adjudicated_tier = models.CharField(max_length=8, choices=Label.Tier.choices, blank=True)
    resolution_note = models.TextField(blank=True)
    resolved_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    resolved_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["created_at", "id"]
        constraints = [
            models.UniqueConstraint(
                fields=["candidate", "grader_run"], name="disagreement_unique_per_run"
            ),
            models.CheckConstraint(
                condition=Q(status__in=["open", "resolved"]), name="disagreement_status_known"
            ),
            models.CheckConstraint(
                condition=Q(
                    resolution__in=["", "grader_right", "reviewer_right", "neither", "unclear"]
                ),
                name="disagreement_resolution_known",
            ),
            models.CheckConstraint(
                condition=Q(adjudicated_tier__in=["", "t1", "t2", "t3", "exploit"]),
                name="disagreement_adjudicated_tier_known",
            ),
            # Resolved exactly when it has an outcome and a time; an open flag carries neither.
            models.CheckConstraint(
                condition=(
                    Q(status="open", resolution="", resolved_at__isnull=True, adjudicated_tier="")
                    | (Q(status="resolved", resolved_at__isnull=False) & ~Q(resolution=""))
                ),
                name="disagreement_resolved_consistently",
            ),
        ]

    def __str__(self) -> str:
        return f"disagreement on candidate {self.candidate_id} ({self.status})"


class ClaimMark(models.Model):
    """A reviewer's mark on one of the grader's claims about the code, after the reveal.

    A claim is one citation of `code` evidence by one judgement (`review.claims`): `claim_key`
    names it within the grader run, `criterion` is what the judgement is about (a rubric
    criterion, a severe issue, the tier or a reorder). The mark belongs to the reviewer's
    candidate whose judgement cites the evidence.
    """

    class Mark(models.TextChoices):
        CORRECT = "correct"
        WRONG = "wrong"
        UNSURE = "unsure", "Can't tell"

    candidate = models.ForeignKey(Candidate, on_delete=models.CASCADE, related_name="claim_marks")
    grader_run = models.ForeignKey(GraderRun, on_delete=models.CASCADE, related_name="+")
    claim_key = models.CharField(max_length=300)
    evidence_id = models.CharField(max_length=100)
    criterion = models.CharField(max_length=32)
    mark = models.CharField(max_length=8, choices=Mark.choices)
    marked_at = models.DateTimeField()

    class Meta:
        ordering = ["candidate_id", "claim_key"]
        constraints = [
            models.UniqueConstraint(
                fields=["candidate", "grader_run", "claim_key"], name="claim_mark_unique"
            ),
            models.CheckConstraint(
                condition=Q(mark__in=["correct", "wrong", "unsure"]), name="claim_mark_known"
            ),
            models.CheckConstraint(
                condition=Q(criterion__in=list(CLAIM_CRITERIA)),
                name="claim_mark_criterion_known",
            ),
            models.CheckConstraint(condition=~Q(claim_key=""), name="claim_mark_key_set"),
        ]

    def __str__(self) -> str:
        return f"{self.mark} on {self.claim_key} (candidate {self.candidate_id})"
