"""Grader configurations, runs (one per configuration × group × replica), their transcripts and
the per-attempt grades of a validated verdict.

A run is a state machine: pending → running → succeeded | failed. A worker claims a pending run
with a conditional UPDATE, beats `heartbeat_at` while it works, and a periodic reaper returns runs
whose heartbeat stopped. Coefficients are never stored from the model: the service computes them.
"""

from __future__ import annotations

from django.db import models
from django.db.models import Q

from grading.models.rollouts import Attempt, Group, Run


class GraderConfig(models.Model):
    class Backend(models.TextChoices):
        ANALYSIS = "analysis", "Analysis (fitted, offline)"
        HEURISTIC = "heuristic"
        OPENAI = "openai", "OpenAI-compatible"
        ANTHROPIC = "anthropic"
        SCRIPTED = "scripted"

    name = models.CharField(max_length=100, unique=True)
    backend = models.CharField(max_length=16, choices=Backend.choices)
    model = models.CharField(max_length=200, blank=True)
    base_url = models.CharField(max_length=500, blank=True, help_text="Never holds a key.")
    prompt_version = models.CharField(max_length=32, default="v2")
    temperature = models.FloatField(default=0.0)
    seed = models.IntegerField(null=True, blank=True)
    rubric_weights = models.JSONField(default=dict, blank=True)
    budget = models.JSONField(default=dict, blank=True)
    options = models.JSONField(
        default=dict,
        blank=True,
        help_text=(
            "Backend options: reasoning (bool), reasoning_effort, limit_parameter, "
            "thinking_budget, stream, idle_timeout_s, context_window, context_target."
        ),
    )
    # Prices in USD per million tokens (unset: GAGAR_GRADER_USD_PER_MTOK_*).
    usd_per_mtok_in = models.FloatField(null=True, blank=True)
    usd_per_mtok_cached_in = models.FloatField(null=True, blank=True)
    usd_per_mtok_out = models.FloatField(null=True, blank=True)
    # Spend limits: a run that would pass one stops with the reason; its group falls back to GRPO.
    max_tokens_per_run = models.PositiveBigIntegerField(null=True, blank=True)
    max_usd_per_run = models.DecimalField(max_digits=12, decimal_places=4, null=True, blank=True)
    max_tokens_per_day = models.PositiveBigIntegerField(null=True, blank=True)
    max_usd_per_day = models.DecimalField(max_digits=12, decimal_places=4, null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.CheckConstraint(
                condition=Q(temperature__gte=0) & Q(temperature__lte=2),
                name="grader_config_temperature_range",
            ),
            models.CheckConstraint(
                condition=(Q(usd_per_mtok_in__isnull=True) | Q(usd_per_mtok_in__gte=0))
                & (Q(usd_per_mtok_cached_in__isnull=True) | Q(usd_per_mtok_cached_in__gte=0))
                & (Q(usd_per_mtok_out__isnull=True) | Q(usd_per_mtok_out__gte=0)),
                name="grader_config_prices_not_negative",
            ),
        ]

    def __str__(self) -> str:
        return self.name


class GraderRun(models.Model):
    class Status(models.TextChoices):
        PENDING = "pending"
        RUNNING = "running"
        SUCCEEDED = "succeeded"
        FAILED = "failed"

    group = models.ForeignKey(Group, on_delete=models.CASCADE, related_name="grader_runs")
    config = models.ForeignKey(GraderConfig, on_delete=models.PROTECT, related_name="runs")
    replica = models.PositiveIntegerField(
        default=0, help_text="Repeat index for stability studies."
    )
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.PENDING)
    deliveries = models.PositiveIntegerField(default=0, help_text="Times a worker claimed it.")
    claimed_by = models.CharField(max_length=200, blank=True)
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    failure_reason = models.TextField(blank=True)
    # The validated verdict, candidates by attempt pk (the aliases the model saw are in alias_map).
    verdict = models.JSONField(null=True, blank=True)
    alias_map = models.JSONField(default=dict, blank=True)
    problems = models.JSONField(default=list, blank=True)
    latency_s = models.FloatField(null=True, blank=True)
    input_tokens = models.PositiveBigIntegerField(default=0)
    output_tokens = models.PositiveBigIntegerField(default=0)
    cached_input_tokens = models.PositiveBigIntegerField(default=0)
    # Some call's usage was not reported by the server and comes from our tokenizer.
    usage_estimated = models.BooleanField(default=False)
    peak_context_tokens = models.PositiveIntegerField(default=0)
    # Tokens of deliveries given up: HTTP retries, and earlier deliveries of the whole run
    # (a worker lost, a transient error) whose transcripts were discarded. Spent all the same.
    abandoned_input_tokens = models.PositiveBigIntegerField(default=0)
    abandoned_output_tokens = models.PositiveBigIntegerField(default=0)
    abandoned_cost_usd = models.DecimalField(max_digits=12, decimal_places=6, default=0)
    llm_calls = models.PositiveIntegerField(default=0)
    tool_calls = models.PositiveIntegerField(default=0)
    # Everything this run cost, abandoned deliveries included.
    cost_usd = models.DecimalField(max_digits=12, decimal_places=6, null=True, blank=True)
    # The prompt the loop really used (a configuration may name a superseded one).
    prompt_version = models.CharField(max_length=32, blank=True)
    # The analysis fit that made the verdict (blank for other backends): exported with it.
    fit_version = models.CharField(max_length=100, blank=True)
    # Whether the grader had the repository (None until a worker ran it), and where from or why
    # not: a run without source judged from diffs alone, which its verdict should be read with.
    has_source = models.BooleanField(null=True, blank=True)
    source_note = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.UniqueConstraint(
                fields=["group", "config", "replica"], name="grader_run_unique_per_config"
            ),
            models.CheckConstraint(
                condition=Q(status__in=["pending", "running", "succeeded", "failed"]),
                name="grader_run_status_known",
            ),
            models.CheckConstraint(
                condition=~Q(status="succeeded") | Q(verdict__isnull=False),
                name="grader_run_succeeded_has_verdict",
            ),
        ]
        indexes = [
            # The reaper and the queue-depth view poll only unfinished runs.
            models.Index(
                fields=["status", "heartbeat_at"],
                name="grader_run_active",
                condition=Q(status__in=["pending", "running"]),
            ),
        ]

    def __str__(self) -> str:
        return f"{self.config} on group {self.group_id} #{self.replica} ({self.status})"


class GraderEvent(models.Model):
    """One LLM call or tool call of a run, in order: the run's readable transcript."""

    class Kind(models.TextChoices):
        LLM_CALL = "llm_call", "LLM call"
        TOOL_CALL = "tool_call", "tool call"
        NOTE = "note"

    run = models.ForeignKey(GraderRun, on_delete=models.CASCADE, related_name="events")
    seq = models.PositiveIntegerField()
    kind = models.CharField(max_length=16, choices=Kind.choices)
    name = models.CharField(max_length=100, blank=True)
    arguments = models.JSONField(default=dict, blank=True)
    output = models.TextField(blank=True, help_text="Truncated.")
    input_tokens = models.PositiveIntegerField(default=0)
    output_tokens = models.PositiveIntegerField(default=0)
    cached_input_tokens = models.PositiveIntegerField(default=0)
    cost_usd = models.DecimalField(max_digits=12, decimal_places=6, null=True, blank=True)
    latency_s = models.FloatField(default=0.0)
    exit_code = models.IntegerField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["run_id", "seq"]
        constraints = [
            models.UniqueConstraint(fields=["run", "seq"], name="grader_event_unique_seq"),
        ]

    def __str__(self) -> str:
        return f"{self.kind} {self.name} #{self.seq}"


class CandidateGrade(models.Model):
    """One attempt's grade in a succeeded run (valid passing attempts only)."""

    run = models.ForeignKey(GraderRun, on_delete=models.CASCADE, related_name="grades")
    attempt = models.ForeignKey(Attempt, on_delete=models.CASCADE, related_name="grades")
    tier = models.PositiveSmallIntegerField()
    rank_in_tier = models.PositiveSmallIntegerField()
    weighted_score = models.FloatField()
    scores = models.JSONField(default=dict)
    severe_issues = models.JSONField(default=list, blank=True)
    exploit_suspected = models.BooleanField(default=False)
    summary = models.TextField(blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["run", "attempt"], name="grade_unique_per_run"),
            models.CheckConstraint(
                condition=Q(tier__gte=1) & Q(tier__lte=3), name="grade_tier_1_3"
            ),
            models.CheckConstraint(condition=Q(rank_in_tier__gte=1), name="grade_rank_positive"),
        ]

    def __str__(self) -> str:
        return f"T{self.tier}#{self.rank_in_tier} attempt {self.attempt_id}"


class GraderFit(models.Model):
    """A fitted analysis-grader artefact (`gagar.analysis-fit.v1`: weights, tier cuts, the
    held-out figures of its fit) for one configuration. The newest one is the one it grades
    with; older ones stay, because runs and exports name the fit that made their verdicts."""

    config = models.ForeignKey(GraderConfig, on_delete=models.CASCADE, related_name="fits")
    version = models.CharField(max_length=100)
    fit = models.JSONField(help_text="The artefact, gagar.analysis-fit.v1.")
    # What it was fitted on: campaign names (or the shipped data), kept as text because a
    # campaign may be deleted later and the fit must still say where it came from.
    campaigns = models.JSONField(default=list, blank=True)
    held_out = models.JSONField(
        default=dict, blank=True, help_text="Leave-one-task-out figures of this fit."
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-pk"]
        constraints = [
            models.UniqueConstraint(fields=["config", "version"], name="grader_fit_unique_version"),
        ]

    def __str__(self) -> str:
        return f"{self.config} fit {self.version}"


class GraderApproval(models.Model):
    """One gate decision for a configuration: its figures against people and the thresholds
    in force. Approved for training = its newest decision passed and was taken on the fit it
    grades with now (a refit needs a new decision)."""

    class Basis(models.TextChoices):
        GOLD = "gold", "gold campaign it was not fitted on"
        LEAVE_ONE_TASK_OUT = "leave_one_task_out", "its fit's leave-one-task-out figures"

    config = models.ForeignKey(GraderConfig, on_delete=models.CASCADE, related_name="approvals")
    fit_version = models.CharField(max_length=100, blank=True)
    basis = models.CharField(max_length=24, choices=Basis.choices)
    campaigns = models.JSONField(default=list, blank=True)
    thresholds = models.JSONField()
    figures = models.JSONField(help_text="Against the reviewers' consensus, with intervals.")
    passed = models.BooleanField()
    failures = models.JSONField(default=list, blank=True, help_text="Thresholds not met.")
    decided_by = models.CharField(max_length=150, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-pk"]
        constraints = [
            models.CheckConstraint(
                condition=Q(basis__in=["gold", "leave_one_task_out"]),
                name="grader_approval_basis_known",
            ),
            models.CheckConstraint(
                condition=~Q(basis="gold") | ~Q(campaigns=[]),
                name="grader_approval_gold_names_campaigns",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.config}: {'passed' if self.passed else 'not passed'} ({self.basis})"


class RunGraderSwitch(models.Model):
    """A training run moved to another grader configuration on request (never implicitly)."""

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="grader_switches")
    from_config = models.ForeignKey(
        GraderConfig, on_delete=models.PROTECT, related_name="+", null=True, blank=True
    )
    to_config = models.ForeignKey(GraderConfig, on_delete=models.PROTECT, related_name="+")
    at_step = models.PositiveIntegerField(null=True, blank=True)
    requested_by = models.CharField(max_length=150, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["run_id", "created_at", "pk"]

    def __str__(self) -> str:
        return f"{self.run}: {self.from_config} -> {self.to_config}"
