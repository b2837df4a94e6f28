"""Campaigns, the groups they hold, assignments (reviewer × group) and per-assignment candidates.

An assignment is a state machine: in_progress → submitted, or in_progress → expired when its
lease runs out (the group goes back to the queue; the same reviewer may pick it up again, with
their drafts intact). A *sentinel* is a second assignment of a reviewer to a group they already
submitted, served later with fresh aliases and order to measure their self-consistency; it is
the only way one reviewer gets a group twice in a campaign (a unique constraint), it never takes
one of the group's k slots, and nothing the reviewer's browser receives tells it apart.
Candidates carry the reviewer's private alias and an opaque random token: the only handles a
reviewer's browser ever sees. The attempt behind a candidate never leaves the server.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q

from grading.models import Attempt, GraderConfig, Group


class Campaign(models.Model):
    class Status(models.TextChoices):
        ACTIVE = "active"
        CLOSED = "closed"

    class Reveal(models.TextChoices):
        NEVER = "never", "never"
        AFTER_SUBMISSION = "after_submission", "grader verdict after submission"

    class Origin(models.TextChoices):
        NATIVE = "native", "reviewed here"
        IMPORTED = "imported", "imported"

    class QueueOrder(models.TextChoices):
        POSITION = "position", "fewest reviews first, then as listed"
        RL_IMPACT = "rl_impact", "by RL impact"

    name = models.CharField(max_length=200, unique=True)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.ACTIVE)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    reviewers = models.ManyToManyField(settings.AUTH_USER_MODEL, related_name="review_campaigns")
    groups = models.ManyToManyField(Group, through="CampaignGroup", related_name="campaigns")
    overlap = models.PositiveSmallIntegerField(default=2, help_text="Reviewers per group (k).")
    show_trajectories = models.BooleanField(default=True)
    show_test_output = models.BooleanField(default=True)
    rubric_required = models.BooleanField(default=True)
    # The task's reference solution (the maintainers' fix) beside the candidates: off by
    # default, since it anchors reviewers on one way of fixing the problem.
    show_reference = models.BooleanField(default=False)
    reveal_policy = models.CharField(max_length=24, choices=Reveal.choices, default=Reveal.NEVER)
    lease_minutes = models.PositiveIntegerField(
        default=180, help_text="An assignment untouched this long expires and returns."
    )
    fingerprint_patterns = models.TextField(
        blank=True, help_text="Extra regular expressions to redact, one per line."
    )
    filters = models.JSONField(default=dict, blank=True, help_text="How the groups were chosen.")
    # Reviews done elsewhere (`manage.py import reviews`): no timing, no fix requests.
    origin = models.CharField(max_length=16, choices=Origin.choices, default=Origin.NATIVE)
    import_sources = models.JSONField(
        default=list, blank=True, help_text="Imported files: path, SHA-256, reviewer, lines."
    )
    # Self-consistency sentinels: this share of each reviewer's submitted groups comes back to
    # them once, later, as a sentinel (review.sentinels).
    sentinel_rate = models.FloatField(
        default=0.0,
        help_text="Share (0–1) of each reviewer's submitted groups that come back to them once, "
        "later, with new aliases and order, to measure their self-consistency.",
    )
    queue_order = models.CharField(
        max_length=16,
        choices=QueueOrder.choices,
        default=QueueOrder.POSITION,
        help_text="By RL impact: groups whose grader tiers are least certain, or where moving one "
        "candidate one tier changes who gains or loses advantage, come first.",
    )
    # Whose stored advantages rank the queue by RL impact; empty: each group's latest graded
    # advantages with the default parameters, whatever the configuration.
    impact_config = models.ForeignKey(
        GraderConfig,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        help_text="By RL impact: the grader configuration whose stored advantages rank the "
        "queue (empty: each group's latest graded ones).",
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.CheckConstraint(condition=Q(overlap__gte=1), name="campaign_overlap_positive"),
            models.CheckConstraint(
                condition=Q(lease_minutes__gte=1), name="campaign_lease_positive"
            ),
            models.CheckConstraint(
                condition=Q(status__in=["active", "closed"]), name="campaign_status_known"
            ),
            models.CheckConstraint(
                condition=Q(reveal_policy__in=["never", "after_submission"]),
                name="campaign_reveal_known",
            ),
            models.CheckConstraint(
                condition=Q(origin__in=["native", "imported"]), name="campaign_origin_known"
            ),
            models.CheckConstraint(
                condition=Q(sentinel_rate__gte=0) & Q(sentinel_rate__lte=1),
                name="campaign_sentinel_rate_share",
            ),
            models.CheckConstraint(
                condition=Q(queue_order__in=["position", "rl_impact"]),
                name="campaign_queue_order_known",
            ),
        ]

    def __str__(self) -> str:
        return self.display_name

    @property
    def imported(self) -> bool:
        return self.origin == self.Origin.IMPORTED

    @property
    def display_name(self) -> str:
        """The name as every page shows it: an imported campaign says so."""
        return f"{self.name} (imported)" if self.imported else self.name


class CampaignGroup(models.Model):
    campaign = models.ForeignKey(Campaign, on_delete=models.CASCADE, related_name="entries")
    group = models.ForeignKey(Group, on_delete=models.PROTECT, related_name="+")
    position = models.PositiveIntegerField(default=0)
    # The group's RL impact (grading.domain.rl_impact) from the stored advantages that
    # `impact_source` names (row id and computation time): recomputed when those change.
    impact = models.FloatField(null=True, blank=True)
    impact_detail = models.JSONField(default=dict, blank=True)
    impact_source = models.CharField(max_length=80, blank=True)

    class Meta:
        ordering = ["campaign_id", "position"]
        constraints = [
            models.UniqueConstraint(fields=["campaign", "group"], name="campaign_group_unique"),
        ]

    def __str__(self) -> str:
        return f"{self.campaign} · group {self.group_id}"


class AssignmentQuerySet(models.QuerySet["Assignment"]):
    def firsts(self) -> AssignmentQuerySet:
        """First reviews: what consensus, agreement and exports count (no sentinels)."""
        return self.filter(sentinel=False)

    def sentinels(self) -> AssignmentQuerySet:
        return self.filter(sentinel=True)


class Assignment(models.Model):
    class Status(models.TextChoices):
        IN_PROGRESS = "in_progress", "in progress"
        SUBMITTED = "submitted"
        EXPIRED = "expired"

    campaign = models.ForeignKey(Campaign, on_delete=models.CASCADE, related_name="assignments")
    group = models.ForeignKey(Group, on_delete=models.PROTECT, related_name="+")
    reviewer = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="review_assignments"
    )
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.IN_PROGRESS)
    started_at = models.DateTimeField()
    expires_at = models.DateTimeField()
    submitted_at = models.DateTimeField(null=True, blank=True)
    # Active-time state machine, advanced by review_events_record (see services/timing.py).
    active_ms = models.PositiveBigIntegerField(default=0)
    last_event_at = models.DateTimeField(null=True, blank=True)
    focus_active = models.BooleanField(default=False)
    focus_candidate = models.ForeignKey(
        "Candidate", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    # An imported review's provenance: file, line, SHA-256 of the line, minutes, notes.
    imported = models.JSONField(default=dict, blank=True)
    # A repeat of this reviewer's own submitted review of the group (see the module docstring).
    # Staff-side only: never rendered, never in a URL, and statistics use the first review.
    sentinel = models.BooleanField(default=False)

    objects = AssignmentQuerySet.as_manager()

    class Meta:
        ordering = ["-started_at"]
        constraints = [
            # One first review per reviewer and group, and at most one sentinel beside it.
            models.UniqueConstraint(
                fields=["campaign", "group", "reviewer", "sentinel"],
                name="assignment_unique_per_reviewer",
            ),
            models.CheckConstraint(
                condition=Q(status__in=["in_progress", "submitted", "expired"]),
                name="assignment_status_known",
            ),
            models.CheckConstraint(
                condition=~Q(status="submitted") | Q(submitted_at__isnull=False),
                name="assignment_submitted_has_time",
            ),
        ]
        indexes = [
            # The queue counts live assignments per group and sweeps expired leases.
            models.Index(
                fields=["campaign", "group"],
                name="assignment_live",
                condition=Q(status__in=["in_progress", "submitted"]),
            ),
            models.Index(
                fields=["expires_at"],
                name="assignment_lease",
                condition=Q(status="in_progress"),
            ),
        ]

    def __str__(self) -> str:
        return f"assignment {self.pk} ({self.status})"

    @property
    def locked(self) -> bool:
        return self.status == self.Status.SUBMITTED


class Candidate(models.Model):
    assignment = models.ForeignKey(Assignment, on_delete=models.CASCADE, related_name="candidates")
    # Never rendered: the browser sees `alias` and `token` only.
    attempt = models.ForeignKey(Attempt, on_delete=models.PROTECT, related_name="+")
    alias = models.CharField(max_length=4)
    position = models.PositiveSmallIntegerField()
    token = models.CharField(max_length=32, unique=True)
    active_ms = models.PositiveBigIntegerField(default=0)
    # Paths of the files the reviewer ticked as viewed: a reading aid kept across reloads and
    # machines, never shown to anyone else.
    viewed_paths = models.JSONField(default=list, blank=True)

    class Meta:
        ordering = ["assignment_id", "position"]
        constraints = [
            models.UniqueConstraint(fields=["assignment", "alias"], name="candidate_unique_alias"),
            models.UniqueConstraint(
                fields=["assignment", "position"], name="candidate_unique_position"
            ),
            models.UniqueConstraint(
                fields=["assignment", "attempt"], name="candidate_unique_attempt"
            ),
        ]

    def __str__(self) -> str:
        return f"candidate {self.alias} of assignment {self.assignment_id}"
