"""Rollouts: tasks, runs and steps, groups, attempts, patches and trajectories.

Natural keys are database constraints; statuses are `TextChoices`. Patches are stored once per
content hash, byte for byte (a `bytea`, because PostgreSQL text refuses NUL). Trajectories are
stored as zstd-compressed chunks of JSON-lines events so a page can read a slice without loading
the whole thing.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q


class Task(models.Model):
    class Source(models.TextChoices):
        """Whether the grader has the task's repository at its base commit (domain.repos)."""

        UNCHECKED = "unchecked"
        FOUND = "found"
        NO_REPOSITORY = "no_repository", "no source: repository not found"
        NO_COMMIT = "no_commit", "no source: base commit not found"

    external_id = models.CharField(max_length=255, unique=True)
    repo = models.CharField(max_length=255, help_text="owner/name of the repository")
    repo_url = models.CharField(
        max_length=1024, blank=True, help_text="Local git path or URL the grader clones."
    )
    base_commit = models.CharField(max_length=64, blank=True)
    problem_statement = models.TextField()
    fail_to_pass = models.JSONField(default=list, blank=True)
    pass_to_pass = models.JSONField(default=list, blank=True)
    test_command = models.CharField(max_length=1024, blank=True)
    # Reference material, never a candidate.
    gold_patch = models.ForeignKey(
        "Patch", null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    test_patch = models.ForeignKey(
        "Patch", null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    metadata = models.JSONField(default=dict, blank=True)
    content_hash = models.CharField(max_length=64)
    # Where the source was found at import (a mirror from --repos or GAGAR_REPO_MIRRORS), or why
    # not. Not part of the content: re-importing with --repos only updates these.
    source_status = models.CharField(
        max_length=16, choices=Source.choices, default=Source.UNCHECKED
    )
    source_path = models.CharField(max_length=1024, blank=True)
    source_note = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.CheckConstraint(
                condition=Q(source_status__in=["unchecked", "found", "no_repository", "no_commit"]),
                name="task_source_status_known",
            ),
            models.CheckConstraint(
                condition=~Q(source_status="found") | ~Q(source_path=""),
                name="task_source_found_has_path",
            ),
        ]

    def __str__(self) -> str:
        return self.external_id

    @property
    def has_source(self) -> bool:
        return self.source_status == self.Source.FOUND


class Run(models.Model):
    name = models.CharField(max_length=255, unique=True)
    metadata = models.JSONField(default=dict, blank=True)
    # The grader configuration that graded the run's first submitted step: later steps keep it
    # when the default changes; only an explicit per-run switch moves it (`RunGraderSwitch`).
    grader_config = models.ForeignKey(
        "grading.GraderConfig", null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return self.name


class Step(models.Model):
    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="steps")
    number = models.PositiveIntegerField()
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["run_id", "number"]
        constraints = [
            models.UniqueConstraint(fields=["run", "number"], name="step_unique_per_run"),
        ]

    def __str__(self) -> str:
        return f"{self.run.name} · step {self.number}"


class Group(models.Model):
    step = models.ForeignKey(Step, on_delete=models.CASCADE, related_name="groups")
    task = models.ForeignKey(Task, on_delete=models.PROTECT, related_name="groups")
    external_id = models.CharField(max_length=255, null=True, blank=True, unique=True)
    content_hash = models.CharField(max_length=64)
    metadata = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["step_id", "task_id"]
        constraints = [
            models.UniqueConstraint(fields=["step", "task"], name="group_unique_per_step_task"),
        ]

    def __str__(self) -> str:
        return f"{self.task.external_id} @ {self.step}"


class Patch(models.Model):
    """A unified diff stored once per SHA-256 of its exact bytes."""

    sha256 = models.CharField(max_length=64, unique=True)
    content = models.BinaryField()
    size = models.PositiveIntegerField()
    parse_error = models.TextField(blank=True)
    files_changed = models.PositiveIntegerField(default=0)
    hunks = models.PositiveIntegerField(default=0)
    lines_added = models.PositiveIntegerField(default=0)
    lines_removed = models.PositiveIntegerField(default=0)
    has_binary = models.BooleanField(default=False)
    touches_tests = models.BooleanField(default=False)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        verbose_name_plural = "patches"

    def __str__(self) -> str:
        return f"patch {self.sha256[:12]} (+{self.lines_added} −{self.lines_removed})"

    @property
    def text(self) -> str:
        """The diff as text for display; undecodable bytes become U+FFFD, the stored bytes stay."""
        return bytes(self.content).decode("utf-8", errors="replace")


class PatchFile(models.Model):
    class Change(models.TextChoices):
        ADDED = "added"
        MODIFIED = "modified"
        DELETED = "deleted"
        RENAMED = "renamed"

    patch = models.ForeignKey(Patch, on_delete=models.CASCADE, related_name="files")
    index = models.PositiveIntegerField()
    source_path = models.CharField(max_length=1024, blank=True)
    target_path = models.CharField(max_length=1024, blank=True)
    change = models.CharField(max_length=16, choices=Change.choices)
    is_binary = models.BooleanField(default=False)
    is_test = models.BooleanField(default=False)
    hunks = models.PositiveIntegerField(default=0)
    lines_added = models.PositiveIntegerField(default=0)
    lines_removed = models.PositiveIntegerField(default=0)

    class Meta:
        ordering = ["patch_id", "index"]
        constraints = [
            models.UniqueConstraint(fields=["patch", "index"], name="patchfile_unique_index"),
        ]

    def __str__(self) -> str:
        return self.path

    @property
    def path(self) -> str:
        return self.target_path or self.source_path


class AttemptQuerySet(models.QuerySet["Attempt"]):
    def passing(self) -> AttemptQuerySet:
        """Valid attempts whose tests pass: the candidates the grader ranks and people review
        (the one home of that rule; `Attempt.passed` is the same test on one row)."""
        return self.filter(status=Attempt.Status.VALID, test_reward__gt=0)


class Attempt(models.Model):
    class Status(models.TextChoices):
        VALID = "valid", "valid"
        INFRA_FAILED = "infra_failed", "infra failed (excluded)"
        EXPLOIT_CONFIRMED = "exploit_confirmed", "exploit confirmed (reward 0)"

    group = models.ForeignKey(Group, on_delete=models.CASCADE, related_name="attempts")
    external_id = models.CharField(max_length=255)
    index = models.PositiveIntegerField(help_text="Position in the group as imported.")
    status = models.CharField(max_length=32, choices=Status.choices, default=Status.VALID)
    test_reward = models.FloatField()
    test_report = models.JSONField(default=dict, blank=True)
    # zstd-compressed bytes: test output may hold NUL or undecodable bytes and is kept faithfully.
    test_output_z = models.BinaryField(default=b"", blank=True)
    test_output_size = models.PositiveIntegerField(default=0)
    # The stored copy's own record of being cut, rather than its marker line (which any test
    # output may print): an import that keeps more of the same output rewrites it in place.
    test_output_dropped = models.PositiveBigIntegerField(
        default=0,
        help_text="Bytes of the test output not stored: the middle of an output over "
        "GAGAR_MAX_TEST_OUTPUT_BYTES, where its marker line is (0: stored whole).",
    )
    patch = models.ForeignKey(
        Patch, null=True, blank=True, on_delete=models.PROTECT, related_name="attempts"
    )
    num_turns = models.PositiveIntegerField(null=True, blank=True)
    tokens_in = models.PositiveBigIntegerField(null=True, blank=True)
    tokens_out = models.PositiveBigIntegerField(null=True, blank=True)
    # Who produced it. Never shown to reviewers.
    agent_system = models.CharField(max_length=255, blank=True)
    agent_model = models.CharField(max_length=255, blank=True)
    agent_family = models.CharField(max_length=255, blank=True)
    agent_metadata = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    objects = AttemptQuerySet.as_manager()

    class Meta:
        ordering = ["group_id", "index"]
        constraints = [
            models.UniqueConstraint(fields=["group", "external_id"], name="attempt_unique_id"),
            models.UniqueConstraint(fields=["group", "index"], name="attempt_unique_index"),
            models.CheckConstraint(
                condition=Q(test_reward__gte=0) & Q(test_reward__lte=1),
                name="attempt_reward_in_unit_interval",
            ),
            models.CheckConstraint(
                condition=Q(status__in=["valid", "infra_failed", "exploit_confirmed"]),
                name="attempt_status_known",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.external_id} ({self.status}, r={self.test_reward:g})"

    @property
    def passed(self) -> bool:
        return self.status == self.Status.VALID and self.test_reward > 0

    def test_output(self) -> bytes:
        from grading.domain.compression import decompress

        return decompress(bytes(self.test_output_z)) if self.test_output_size else b""


class Trajectory(models.Model):
    class Format(models.TextChoices):
        NATIVE = "native"
        SWE_AGENT = "swe-agent"
        OPENHANDS = "openhands"
        CHAT = "chat"
        MOATLESS = "moatless"

    attempt = models.OneToOneField(Attempt, on_delete=models.CASCADE, related_name="trajectory")
    format = models.CharField(max_length=16, choices=Format.choices)
    event_count = models.PositiveIntegerField(default=0)
    raw_size = models.PositiveBigIntegerField(default=0, help_text="Bytes of events as JSON.")
    stored_size = models.PositiveBigIntegerField(default=0, help_text="Compressed bytes.")
    sha256 = models.CharField(max_length=64)

    class Meta:
        verbose_name_plural = "trajectories"

    def __str__(self) -> str:
        return f"{self.format} trajectory, {self.event_count} events"


class TrajectoryChunk(models.Model):
    """A run of consecutive events, zstd-compressed JSON lines; slices read only what they need."""

    trajectory = models.ForeignKey(Trajectory, on_delete=models.CASCADE, related_name="chunks")
    seq = models.PositiveIntegerField()
    first_event = models.PositiveIntegerField()
    event_count = models.PositiveIntegerField()
    data = models.BinaryField()

    class Meta:
        ordering = ["trajectory_id", "seq"]
        constraints = [
            models.UniqueConstraint(fields=["trajectory", "seq"], name="chunk_unique_seq"),
        ]
        indexes = [models.Index(fields=["trajectory", "first_event"], name="chunk_event_lookup")]

    def __str__(self) -> str:
        return f"chunk {self.seq} of trajectory {self.trajectory_id}"


class ApiToken(models.Model):
    """A token for a training loop or a pipeline. Only its SHA-256 is stored; the secret is shown
    once. It belongs to a staff or service account (never a reviewer: grading/services/tokens.py)
    and carries scopes: `submit` (send groups, fetch their advantages), `read` (runs, grader runs,
    verdicts, labels, advantages), `export` (the three exports)."""

    class Scope(models.TextChoices):
        SUBMIT = "submit", "submit groups and fetch their advantages"
        READ = "read", "read runs, grader runs, verdicts, labels and advantages"
        EXPORT = "export", "download the exports"

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens"
    )
    name = models.CharField(max_length=100)
    prefix = models.CharField(max_length=12, help_text="First characters, to recognise a token.")
    key_hash = models.CharField(max_length=64, unique=True)
    scopes = models.JSONField(default=list, help_text="Any of submit, read, export.")
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    def __str__(self) -> str:
        return f"{self.name} ({self.prefix}…)"
