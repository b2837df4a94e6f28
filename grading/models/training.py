"""Advantages handed back to a training loop, and the idempotency keys of its submissions.

`GroupAdvantages` is derived data: method §4 applied to one group with one grader configuration and
one set of parameters (λ_max, coefficients, std normalization), from the latest succeeded grader
run, or plain GRPO (`fallback`) when there is none. It is recomputed in place when a newer verdict
arrives, so there is one row per (group, configuration, parameters).

The per-attempt values live in a JSON list (`attempts`, in attempt index order) rather than in a
row per attempt, because:
- they are always written and read together: a newer verdict replaces the whole group in one
  UPDATE, and every reader (API, export, admin) wants the whole group;
- at training scale (128 groups × 16 attempts per step, thousands of steps) a row per attempt
  would double the size of the attempt table for values that can be recomputed from the verdict;
- what must be queryable across groups (λ audit, cap frequency, fallback) is in columns here.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q

from grading.models.grader import GraderConfig, GraderRun
from grading.models.rollouts import Group


class GroupAdvantages(models.Model):
    class FallbackReason(models.TextChoices):
        NONE = "", "graded"
        PENDING = "pending", "grading pending"
        FAILED = "failed", "grading failed"
        NEVER_REQUESTED = "never_requested", "grading never requested"
        INVALID_VERDICT = "invalid_verdict", "verdict does not grade every passer"

    group = models.ForeignKey(Group, on_delete=models.CASCADE, related_name="advantages")
    config = models.ForeignKey(GraderConfig, on_delete=models.PROTECT, related_name="advantages")
    # SHA-256 of the canonical JSON of `params`: part of the natural key.
    params_hash = models.CharField(max_length=64)
    params = models.JSONField(help_text="lambda_max, coefficients, std normalization.")
    # Derived from the run's grades: deleting the run deletes them (a refresh recomputes).
    grader_run = models.ForeignKey(
        GraderRun, null=True, blank=True, on_delete=models.CASCADE, related_name="+"
    )
    fallback = models.BooleanField()
    fallback_reason = models.CharField(
        max_length=32, choices=FallbackReason.choices, blank=True, default=FallbackReason.NONE
    )
    n_attempts = models.PositiveIntegerField()
    n_valid = models.PositiveIntegerField()
    mean_reward = models.FloatField(null=True, blank=True)
    reward_std = models.FloatField(null=True, blank=True)
    lambda_raw = models.FloatField(null=True, blank=True)
    lambda_applied = models.FloatField(null=True, blank=True)
    capped = models.BooleanField()
    mean_shift = models.FloatField()
    positive_total_before = models.FloatField()
    positive_total_after = models.FloatField()
    attempts = models.JSONField(help_text="Per-attempt values in attempt index order.")
    computed_at = models.DateTimeField()

    class Meta:
        verbose_name_plural = "group advantages"
        ordering = ["group_id", "config_id"]
        constraints = [
            models.UniqueConstraint(
                fields=["group", "config", "params_hash"], name="group_advantages_unique"
            ),
            # A graded row names its verdict; a fallback row names none, except an invalid verdict,
            # which names the run it refused (so the row is fresh until a newer run succeeds).
            models.CheckConstraint(
                condition=(Q(fallback=False) & Q(fallback_reason="") & Q(grader_run__isnull=False))
                | (
                    Q(fallback=True)
                    & Q(fallback_reason__in=["pending", "failed", "never_requested"])
                    & Q(grader_run__isnull=True)
                )
                | (
                    Q(fallback=True)
                    & Q(fallback_reason="invalid_verdict")
                    & Q(grader_run__isnull=False)
                ),
                name="group_advantages_fallback_consistent",
            ),
            models.CheckConstraint(
                condition=Q(capped=False) | Q(lambda_raw__isnull=False),
                name="group_advantages_capped_has_lambda",
            ),
        ]

    def __str__(self) -> str:
        state = f"fallback ({self.fallback_reason})" if self.fallback else "graded"
        return f"advantages of group {self.group_id} · {self.config} · {state}"


class IdempotencyKey(models.Model):
    """A training loop's `Idempotency-Key`: the first response is replayed for a retry."""

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="idempotency_keys"
    )
    key = models.CharField(max_length=255)
    # A reused key with a different body is a client bug, answered with 422, not a replay.
    request_hash = models.CharField(max_length=64)
    status_code = models.PositiveSmallIntegerField()
    response = models.JSONField()
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["user", "key"], name="idempotency_key_unique"),
        ]

    def __str__(self) -> str:
        return f"{self.key} ({self.status_code})"
