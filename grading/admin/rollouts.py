"""Admin for every rollout model, enough to browse a group end to end."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.db.models import Count, QuerySet
from django.http import HttpRequest
from django.urls import reverse
from django.utils.html import format_html, format_html_join

from grading.admin.data_version import VersionedAdmin
from grading.domain.hostile_text import strip_ansi
from grading.domain.wording import plural
from grading.models import (
    Attempt,
    Group,
    Patch,
    PatchFile,
    Run,
    Step,
    Task,
    Trajectory,
    TrajectoryChunk,
)
from grading.selectors.rollouts import trajectory_events
from grading.selectors.synthetic import run_is_synthetic

PREVIEW_BYTES = 200_000
PREVIEW_EVENTS = 200


def _link(obj: Any, label: str | None = None) -> str:
    if obj is None:
        return "—"
    url = reverse(f"admin:{obj._meta.app_label}_{obj._meta.model_name}_change", args=[obj.pk])
    return format_html('<a href="{}">{}</a>', url, label or str(obj))


def _pre(text: str) -> str:
    return format_html('<pre class="gagar-pre">{}</pre>', text)


class _Imported:
    """Imported rollouts are the record of what happened in training: viewed here, never added,
    edited or deleted by hand (a re-import is the way to change them)."""

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(Run)
class RunAdmin(_Imported, admin.ModelAdmin[Run]):
    list_display = ["name", "synthetic", "created_at", "step_count"]
    search_fields = ["name"]

    @admin.display(description="synthetic", boolean=True)
    def synthetic(self, obj: Run) -> bool:
        return run_is_synthetic(obj)

    def get_queryset(self, request: HttpRequest) -> QuerySet[Run]:
        return super().get_queryset(request).annotate(n_steps=Count("steps"))

    @admin.display(description="steps", ordering="n_steps")
    def step_count(self, obj: Any) -> int:
        return int(obj.n_steps)


@admin.register(Step)
class StepAdmin(_Imported, admin.ModelAdmin[Step]):
    list_display = ["__str__", "run", "number", "created_at"]
    list_filter = ["run"]
    list_select_related = ["run"]


@admin.register(Task)
class TaskAdmin(_Imported, admin.ModelAdmin[Task]):
    list_display = ["external_id", "repo", "base_commit", "source", "created_at"]
    search_fields = ["external_id", "repo", "problem_statement"]
    list_filter = ["source_status", "repo"]
    readonly_fields = [
        "content_hash",
        "created_at",
        "gold_patch_link",
        "test_patch_link",
        "source_status",
        "source_path",
        "source_note",
    ]
    exclude = ["gold_patch", "test_patch"]

    @admin.display(description="source", ordering="source_status")
    def source(self, obj: Task) -> str:
        # "no source": the grader gets no repository for this task, and is told so.
        if obj.source_status == Task.Source.FOUND:
            return "found"
        if obj.source_status == Task.Source.UNCHECKED:
            return "not checked yet"
        return "no source"

    @admin.display(description="gold patch")
    def gold_patch_link(self, obj: Task) -> str:
        return _link(obj.gold_patch)

    @admin.display(description="test patch")
    def test_patch_link(self, obj: Task) -> str:
        return _link(obj.test_patch)


class AttemptInline(_Imported, admin.TabularInline[Attempt, Group]):
    model = Attempt
    extra = 0
    can_delete = False
    show_change_link = True
    fields = (
        "external_id",
        "status",
        "test_reward",
        "agent_system",
        "agent_model",
        "diffstat",
        "num_turns",
        "tokens_in",
        "tokens_out",
    )
    readonly_fields = fields

    @admin.display(description="diff")
    def diffstat(self, obj: Attempt) -> str:
        if obj.patch is None:
            return "no patch"
        return format_html(
            "{}, +{} −{}{}",
            plural(obj.patch.files_changed, "file"),
            obj.patch.lines_added,
            obj.patch.lines_removed,
            " · touches tests" if obj.patch.touches_tests else "",
        )

    def get_queryset(self, request: HttpRequest) -> QuerySet[Attempt]:
        return super().get_queryset(request).select_related("patch")


@admin.register(Group)
class GroupAdmin(_Imported, admin.ModelAdmin[Group]):
    list_display = [
        "__str__",
        "run_name",
        "step_number",
        "task_link",
        "attempt_count",
        "passed_count",
        "created_at",
    ]
    list_filter = ["step__run", "task__repo"]
    search_fields = ["task__external_id", "external_id", "step__run__name"]
    list_select_related = ["step__run", "task"]
    readonly_fields = [
        "step",
        "task_link",
        "external_id",
        "content_hash",
        "metadata",
        "created_at",
        "problem_statement",
    ]
    exclude = ["task"]
    inlines = [AttemptInline]

    def get_queryset(self, request: HttpRequest) -> QuerySet[Group]:
        return (
            super()
            .get_queryset(request)
            .annotate(
                n_attempts=Count("attempts", distinct=True),
            )
        )

    @admin.display(description="run", ordering="step__run__name")
    def run_name(self, obj: Group) -> str:
        return obj.step.run.name

    @admin.display(description="step", ordering="step__number")
    def step_number(self, obj: Group) -> int:
        return obj.step.number

    @admin.display(description="task")
    def task_link(self, obj: Group) -> str:
        return _link(obj.task, obj.task.external_id)

    @admin.display(description="attempts", ordering="n_attempts")
    def attempt_count(self, obj: Any) -> int:
        return int(obj.n_attempts)

    @admin.display(description="passed")
    def passed_count(self, obj: Group) -> int:
        return obj.attempts.passing().count()

    @admin.display(description="problem statement")
    def problem_statement(self, obj: Group) -> str:
        return _pre(obj.task.problem_statement)


@admin.register(Attempt)
class AttemptAdmin(VersionedAdmin[Attempt]):
    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False  # the status (below) is the one staff decision on an imported attempt

    list_display = ["external_id", "group", "status", "test_reward", "agent_system", "agent_model"]
    list_filter = ["status", "agent_family", "group__step__run"]
    search_fields = ["external_id", "agent_system", "agent_model", "group__task__external_id"]
    list_select_related = ["group__task", "group__step__run"]
    # Imported data is the record of what happened: only the status is a staff decision
    # (e.g. confirming an exploit); everything else is read-only.
    fieldsets = [
        (None, {"fields": ["group_link", "external_id", "index", "status", "test_reward"]}),
        (
            "Agent",
            {
                "fields": [
                    "agent_system",
                    "agent_model",
                    "agent_family",
                    "agent_metadata",
                    "num_turns",
                    "tokens_in",
                    "tokens_out",
                ]
            },
        ),
        ("Diff", {"fields": ["patch_link", "diff"]}),
        ("Tests", {"fields": ["test_report", "test_output_text", "test_output_dropped"]}),
        ("Trajectory", {"fields": ["trajectory_preview"]}),
    ]
    readonly_fields = [
        "group_link",
        "external_id",
        "index",
        "test_reward",
        "agent_system",
        "agent_model",
        "agent_family",
        "agent_metadata",
        "num_turns",
        "tokens_in",
        "tokens_out",
        "patch_link",
        "diff",
        "test_report",
        "test_output_text",
        "test_output_dropped",
        "trajectory_preview",
    ]

    @admin.display(description="group")
    def group_link(self, obj: Attempt) -> str:
        return _link(obj.group)

    @admin.display(description="patch")
    def patch_link(self, obj: Attempt) -> str:
        return _link(obj.patch)

    @admin.display(description="diff")
    def diff(self, obj: Attempt) -> str:
        if obj.patch is None:
            return "—"
        data = bytes(obj.patch.content)[:PREVIEW_BYTES]
        return _pre(data.decode("utf-8", errors="replace"))

    @admin.display(description="test output")
    def test_output_text(self, obj: Attempt) -> str:
        # Colour and cursor sequences stripped; other control characters are shown as marks
        # on every page (gagar_site/inert_text.py).
        text = obj.test_output()[:PREVIEW_BYTES].decode("utf-8", errors="replace")
        return _pre(strip_ansi(text))

    @admin.display(description=f"trajectory (first {PREVIEW_EVENTS} events)")
    def trajectory_preview(self, obj: Attempt) -> str:
        trajectory = Trajectory.objects.filter(attempt=obj).first()
        if trajectory is None:
            return "—"
        return _events_table(trajectory, 0, PREVIEW_EVENTS)


def _events_table(trajectory: Trajectory, start: int, count: int) -> str:
    events = trajectory_events(trajectory=trajectory, start=start, count=count)
    rows = format_html_join(
        "",
        "<tr><td>{}</td><td>{}</td><td>{}</td><td><pre class='gagar-pre short'>{}</pre></td></tr>",
        (
            (
                e["index"],
                e.get("kind", ""),
                e.get("tool") or e.get("role") or "",
                (e.get("text") or "")[:4000] + (f"\n$ {e['args']}" if e.get("args") else ""),
            )
            for e in events
        ),
    )
    return format_html(
        "<p>{} events, {} bytes ({} stored)</p><table><tr><th>#</th><th>kind</th><th>who</th>"
        "<th>text</th></tr>{}</table>",
        trajectory.event_count,
        trajectory.raw_size,
        trajectory.stored_size,
        rows,
    )


class PatchFileInline(_Imported, admin.TabularInline[PatchFile, Patch]):
    model = PatchFile
    extra = 0
    can_delete = False
    fields = (
        "index",
        "source_path",
        "target_path",
        "change",
        "is_binary",
        "is_test",
        "hunks",
        "lines_added",
        "lines_removed",
    )
    readonly_fields = fields


@admin.register(Patch)
class PatchAdmin(_Imported, admin.ModelAdmin[Patch]):
    # Stored once per content hash: editing would break the hash.

    list_display = [
        "sha256",
        "files_changed",
        "lines_added",
        "lines_removed",
        "has_binary",
        "touches_tests",
        "size",
    ]
    list_filter = ["has_binary", "touches_tests"]
    search_fields = ["sha256"]
    exclude = ["content"]
    readonly_fields = [
        "sha256",
        "size",
        "parse_error",
        "files_changed",
        "hunks",
        "lines_added",
        "lines_removed",
        "has_binary",
        "touches_tests",
        "diff",
        "created_at",
    ]
    inlines = [PatchFileInline]

    @admin.display(description="diff")
    def diff(self, obj: Patch) -> str:
        return _pre(bytes(obj.content)[:PREVIEW_BYTES].decode("utf-8", errors="replace"))


@admin.register(Trajectory)
class TrajectoryAdmin(_Imported, admin.ModelAdmin[Trajectory]):
    list_display = ["__str__", "attempt", "format", "event_count", "raw_size", "stored_size"]
    list_filter = ["format"]
    list_select_related = ["attempt"]
    exclude = ["attempt"]
    readonly_fields = [
        "attempt_link",
        "format",
        "event_count",
        "raw_size",
        "stored_size",
        "sha256",
        "events",
    ]

    @admin.display(description="attempt")
    def attempt_link(self, obj: Trajectory) -> str:
        return _link(obj.attempt)

    @admin.display(description=f"events (first {PREVIEW_EVENTS})")
    def events(self, obj: Trajectory) -> str:
        return _events_table(obj, 0, PREVIEW_EVENTS)


@admin.register(TrajectoryChunk)
class TrajectoryChunkAdmin(_Imported, admin.ModelAdmin[TrajectoryChunk]):
    list_display = ["trajectory", "seq", "first_event", "event_count"]
    exclude = ["data"]
    readonly_fields = ["trajectory", "seq", "first_event", "event_count"]
