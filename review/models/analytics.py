"""Derived analytics: cached dashboard statistics, human consensus and calibrated tiers.

Everything here is recomputable from labels and grades. It is stored because a bootstrap over
thousands of tasks takes seconds (the dashboard must never wait for one) and because exports
need one agreed consensus and calibration per grader configuration, not one per request.

`StatsSnapshot` is a state machine: pending → computing → ready | failed, and back to pending
when a page or the periodic task asks for a refresh. A worker claims it with a conditional
UPDATE; the payload of the previous computation stays readable while the next one runs.
"""

from __future__ import annotations

from django.db import models
from django.db.models import Q

from grading.models import Attempt, GraderConfig, GraderRun


class StatsSnapshot(models.Model):
    class Kind(models.TextChoices):
        AGREEMENT = "agreement"
        AUDIT = "audit"

    class Status(models.TextChoices):
        PENDING = "pending"
        COMPUTING = "computing"
        READY = "ready"
        FAILED = "failed"

    kind = models.CharField(max_length=16, choices=Kind.choices)
    # SHA-256 of the canonical JSON of (kind, params): the cache key.
    params_hash = models.CharField(max_length=64, unique=True)
    params = models.JSONField(help_text="Filters and bootstrap settings.")
    status = models.CharField(max_length=12, choices=Status.choices, default=Status.PENDING)
    payload = models.JSONField(null=True, blank=True, help_text="Last computed statistics.")
    # The data version the payload was computed on (see analytics.snapshots.data_fingerprint).
    fingerprint = models.CharField(max_length=64, blank=True)
    computed_at = models.DateTimeField(null=True, blank=True)
    duration_s = models.FloatField(null=True, blank=True)
    requested_at = models.DateTimeField()
    started_at = models.DateTimeField(null=True, blank=True)
    error = models.TextField(blank=True)

    class Meta:
        ordering = ["-requested_at"]
        constraints = [
            models.CheckConstraint(
                condition=Q(kind__in=["agreement", "audit"]), name="stats_snapshot_kind_known"
            ),
            models.CheckConstraint(
                condition=Q(status__in=["pending", "computing", "ready", "failed"]),
                name="stats_snapshot_status_known",
            ),
            models.CheckConstraint(
                condition=~Q(status="ready")
                | (Q(payload__isnull=False) & Q(computed_at__isnull=False)),
                name="stats_snapshot_ready_has_payload",
            ),
        ]
        indexes = [
            # The periodic refresh looks for recently requested snapshots still waiting.
            models.Index(
                fields=["status", "requested_at"],
                name="stats_snapshot_waiting",
                condition=Q(status__in=["pending", "computing"]),
            ),
        ]

    def __str__(self) -> str:
        return f"{self.kind} snapshot {self.params_hash[:10]} ({self.status})"


class ConsensusLabel(models.Model):
    """The human consensus on one attempt. The grader never votes here (method §7)."""

    class Method(models.TextChoices):
        MEDIAN = "median", "median tier"
        DAWID_SKENE = "dawid_skene", "one-coin Dawid–Skene (3+ reviewers)"
        EXPLOIT = "exploit", "majority flagged exploit"

    attempt = models.OneToOneField(Attempt, on_delete=models.CASCADE, related_name="consensus")
    # Null when the consensus is "exploit" (not an ordinal tier).
    tier = models.PositiveSmallIntegerField(null=True, blank=True)
    method = models.CharField(max_length=16, choices=Method.choices)
    n_reviews = models.PositiveSmallIntegerField()
    n_exploit = models.PositiveSmallIntegerField(default=0)
    computed_at = models.DateTimeField()

    class Meta:
        constraints = [
            models.CheckConstraint(
                condition=Q(tier__isnull=True) | (Q(tier__gte=1) & Q(tier__lte=3)),
                name="consensus_tier_1_3",
            ),
            models.CheckConstraint(
                condition=Q(method__in=["median", "dawid_skene", "exploit"]),
                name="consensus_method_known",
            ),
            models.CheckConstraint(
                condition=Q(method="exploit") | Q(tier__isnull=False),
                name="consensus_tier_unless_exploit",
            ),
            models.CheckConstraint(condition=Q(n_reviews__gte=1), name="consensus_has_reviews"),
        ]

    def __str__(self) -> str:
        return f"consensus T{self.tier or '×'} for attempt {self.attempt_id}"


class CalibrationFit(models.Model):
    """Weighted score → human tier for one grader configuration, cross-validated by task."""

    config = models.OneToOneField(
        GraderConfig, on_delete=models.CASCADE, related_name="calibration"
    )
    method = models.CharField(max_length=32, default="isotonic_per_threshold")
    n_labelled = models.PositiveIntegerField()
    n_scored = models.PositiveIntegerField()
    n_folds = models.PositiveSmallIntegerField()
    held_out_mae = models.FloatField(null=True, blank=True)
    held_out_accuracy = models.FloatField(null=True, blank=True)
    reason = models.CharField(max_length=200, blank=True, help_text="Why an error is missing.")
    fingerprint = models.CharField(max_length=64)
    computed_at = models.DateTimeField()

    class Meta:
        constraints = [
            models.CheckConstraint(
                condition=Q(held_out_mae__isnull=True) | Q(held_out_mae__gte=0),
                name="calibration_mae_non_negative",
            ),
        ]

    def __str__(self) -> str:
        return f"calibration of {self.config}"


class CalibratedLabel(models.Model):
    """One graded attempt's calibrated tier and P(T1..T3) under one configuration's fit."""

    fit = models.ForeignKey(CalibrationFit, on_delete=models.CASCADE, related_name="labels")
    attempt = models.ForeignKey(Attempt, on_delete=models.CASCADE, related_name="+")
    # The verdict whose weighted score was calibrated.
    grader_run = models.ForeignKey(GraderRun, on_delete=models.CASCADE, related_name="+")
    weighted_score = models.FloatField()
    tier = models.PositiveSmallIntegerField()
    p_t1 = models.FloatField()
    p_t2 = models.FloatField()
    p_t3 = models.FloatField()
    held_out = models.BooleanField(help_text="Predicted by a fold that did not see its task.")

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["fit", "attempt"], name="calibrated_label_unique"),
            models.CheckConstraint(
                condition=Q(tier__gte=1) & Q(tier__lte=3), name="calibrated_tier_1_3"
            ),
            models.CheckConstraint(
                condition=Q(p_t1__gte=0) & Q(p_t2__gte=0) & Q(p_t3__gte=0),
                name="calibrated_probabilities_non_negative",
            ),
        ]

    def __str__(self) -> str:
        return f"calibrated T{self.tier} for attempt {self.attempt_id}"
