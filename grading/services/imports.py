"""Write imported groups. A file is all-or-nothing unless partial import is asked for.

Every group is written inside its own savepoint; in all-or-nothing mode the first problem stops
writing, the rest of the file is still read so every problem is reported at once, and the outer
transaction is rolled back.

A group's outcome (`Outcome`): "created"; "unchanged" (the same content is stored: nothing
written); "completed" (the same content, but a test output stored cut is rewritten in place
because this import keeps more of it, under a larger GAGAR_MAX_TEST_OUTPUT_BYTES: the group, its
attempts, reviews and grades stay); "replaced" (other content, with `replace`: deleted and
written again).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, get_args

from django.db import (
    DatabaseError,
    IntegrityError,
    InterfaceError,
    OperationalError,
    ProgrammingError,
    transaction,
)

from grading.domain.compression import compress
from grading.domain.records import (
    AttemptRecord,
    GroupRecord,
    ImportNote,
    ImportProblem,
    ImportProblemError,
    PatchRecord,
    TaskRecord,
)
from grading.domain.repos import NO_FOLDERS
from grading.domain.test_outputs import SETTING as TEST_OUTPUT_SETTING
from grading.domain.test_outputs import KeptOutput
from grading.domain.wording import plural
from grading.models import Attempt, Group, Patch, PatchFile, Run, Step, Task
from grading.services.data_version import data_changed
from grading.services.repo_sources import task_source_check
from grading.services.trajectories import trajectory_store

Outcome = Literal["created", "unchanged", "completed", "replaced"]
# Every outcome, in the order summaries name them: the API's enum is this (grading.api).
OUTCOMES: tuple[Outcome, ...] = get_args(Outcome)
logger = logging.getLogger("gagar.import")
MAX_REPORTED_PROBLEMS = 200
NO_PASSING = "0 passing attempts"
MAX_LISTED = 10

# The same service serves the command line and the API: name both ways to overwrite.
_REPLACE_HINT = "to overwrite it, import again with --replace, or replace=true over the API"


@dataclass
class GroupResult:
    group_id: int
    external_id: str | None
    run: str
    step: int
    task: str
    outcome: Outcome
    # What this import did to the group that the outcome alone does not say (the test outputs
    # a "completed" group had rewritten); dropped with the results when the import rolls back.
    notes: list[ImportNote] = field(default_factory=list)


@dataclass
class ImportReport:
    results: list[GroupResult] = field(default_factory=list)
    problems: list[ImportProblem] = field(default_factory=list)
    notes: list[ImportNote] = field(default_factory=list)
    attempts_created: int = 0
    # Over every group read (written, unchanged or replaced): what the grader will have.
    attempts_read: int = 0
    attempts_passing: int = 0
    # Of those, attempts whose patch changes a binary file (flagged on the patch: has_binary).
    attempts_binary: int = 0
    # Tasks the grader will have no repository for: external id -> why; and those it will.
    no_source: dict[str, str] = field(default_factory=dict)
    with_source: set[str] = field(default_factory=set)
    rolled_back: bool = False

    def count(self, outcome: Outcome) -> int:
        return sum(1 for r in self.results if r.outcome == outcome)

    @property
    def ok(self) -> bool:
        return not self.problems

    def summary(self) -> str:
        # "completed" is named only when there is one: it is rare, and this line is parsed.
        completed = self.count("completed")
        head = (
            f"{plural(self.count('created'), 'group')} created, "
            f"{self.count('unchanged')} unchanged, "
            + (f"{completed} completed, " if completed else "")
            + f"{self.count('replaced')} replaced, "
            f"{plural(self.attempts_created, 'attempt')} written"
        )
        if self.rolled_back:
            problems = plural(len(self.problems), "problem")
            head = f"nothing written ({problems}; the file is all-or-nothing)"
        elif self.problems:
            head += f"; {plural(len(self.problems), 'group')} skipped"
        lines = [head]
        if not self.rolled_back and self.attempts_read:
            read = plural(self.attempts_read, "attempt")
            lines.append(f"{self.attempts_passing} of {read} pass")
        if not self.rolled_back and self.attempts_binary:
            lines.append(
                f"{plural(self.attempts_binary, 'attempt')} change binary files: stored and "
                "flagged; reviewers and the grader see a binary change, not code"
            )
        if not self.rolled_back and (self.no_source or self.with_source):
            lines.append(
                f"repository source: {plural(len(self.with_source), 'task')} found, "
                f"{len(self.no_source)} no source"
            )
            shown = list(self.no_source.items())
            if shown and all(NO_FOLDERS in why for _, why in shown):
                # One reason for all: said once.
                lines[-1] += f" ({NO_FOLDERS}: --repos DIR or GAGAR_REPO_MIRRORS)"
                shown = []
            lines += [f"  no source: {task}: {why}" for task, why in shown[:MAX_LISTED]]
            if len(shown) > MAX_LISTED:
                lines.append(f"  … and {len(shown) - MAX_LISTED} more (see the admin)")
        lines += [f"warning: {w}" for w in self.warnings()]
        lines += [f"note: {n}" for n in self.notes]
        lines += [f"note: {n}" for r in self.results for n in r.notes]
        return "\n".join(lines)

    def note_source(self, task: Task) -> None:
        if task.has_source:
            self.with_source.add(task.external_id)
        else:
            self.no_source[task.external_id] = task.source_note

    def warnings(self) -> list[str]:
        if self.rolled_back or not self.attempts_read or self.attempts_passing:
            return []
        return [f"{NO_PASSING}: nothing will be graded (no report, or no attempt resolved)"]


class ImportFailedError(Exception):
    def __init__(self, report: ImportReport) -> None:
        super().__init__(report.summary())
        self.report = report


class _Conflict(Exception):
    pass


class _DatabaseRefused(Exception):
    """The database refused a write the checks let through (a value over a column's range, a
    constraint, a concurrent import): located at the record's field, without the SQL."""

    def __init__(self, field: str, exc: DatabaseError) -> None:
        super().__init__(field)
        self.field = field
        self.message = database_message(exc)


def database_message(exc: DatabaseError) -> str:
    """What the database said, in one line: PostgreSQL's primary message (never the statement,
    its DETAIL with the row's values or its CONTEXT), with the column when it names one."""
    diag = getattr(exc.__cause__, "diag", None)
    primary = getattr(diag, "message_primary", None) or (str(exc).strip().splitlines() or [""])[0]
    column = getattr(diag, "column_name", None)
    if column and column not in primary:
        primary += f" (column {column})"
    said = "reports a conflict" if isinstance(exc, IntegrityError) else "refused a value"
    return f"the database {said}: {primary[:300]}; nothing of this group was written"


@contextmanager
def _writing(field: str) -> Iterator[None]:
    """Name the record's field that a database error of the writes inside belongs to. A lost
    connection, or SQL of ours the database cannot run, is not the record's fault: it
    propagates."""
    try:
        yield
    except (OperationalError, InterfaceError, ProgrammingError):
        raise  # the connection or our own SQL, not the record
    except DatabaseError as exc:
        raise _DatabaseRefused(field, exc) from exc


# Kept whole (C901): one transaction over the records; its branches are the record kinds.
def groups_import(  # noqa: C901
    *,
    records: Iterable[GroupRecord | ImportProblem | ImportNote],
    partial: bool = False,
    replace: bool = False,
    require_passing: bool = False,
    repo_folders: Sequence[Path] = (),
    on_group: Callable[[GroupRecord | ImportProblem | ImportNote], None] | None = None,
) -> ImportReport:
    """Write every record. Unless partial, any problem raises ImportFailedError, writing nothing.

    With `require_passing`, an import in which no attempt passes is a problem too (whatever
    `partial` says): there would be nothing to grade.
    """
    report = ImportReport()
    started = time.monotonic()
    # (run, step, task) -> the line of its first group: a second one in the same input is a
    # mistake, not a re-import (it was counted twice, or called an existing group).
    seen: dict[tuple[str, int, str], int | None] = {}
    with transaction.atomic():
        for item in records:
            if on_group:
                on_group(item)
            if isinstance(item, ImportNote):
                report.notes.append(item)
                continue
            if isinstance(item, ImportProblem):
                _note(report, item)
                continue
            key = (item.run, item.step, item.task_id)
            if key in seen:
                _note(report, _second_group(item, seen[key]))
                continue
            seen[key] = item.line
            report.attempts_read += len(item.attempts)
            report.attempts_passing += sum(1 for a in item.attempts if a.passed)
            report.attempts_binary += sum(
                1 for a in item.attempts if a.patch is not None and a.patch.stats.has_binary
            )
            if report.problems and not partial:
                continue  # keep reading to report every problem; write nothing more
            try:
                with transaction.atomic():
                    result, attempts = group_write(
                        record=item, replace=replace, repo_folders=repo_folders, report=report
                    )
            except ImportProblemError as exc:
                _note(report, exc.problem)
                continue
            except _Conflict as exc:
                _note(report, ImportProblem(item.source, item.line, "", str(exc)))
                continue
            except _DatabaseRefused as exc:
                _note(report, ImportProblem(item.source, item.line, exc.field, exc.message))
                continue
            report.results.append(result)
            report.attempts_created += attempts
        if not report.attempts_read and not report.problems and not report.notes:
            _note(report, ImportProblem("", None, "", "nothing to import: no records were read"))
        if require_passing and not report.attempts_passing:
            _note(
                report,
                ImportProblem(
                    "",
                    None,
                    "",
                    f"{NO_PASSING} in {plural(report.attempts_read, 'attempt')} read: nothing "
                    "would be graded (--require-passing)",
                ),
            )
            partial = False
        if report.problems and not partial:
            report.rolled_back = True
            report.attempts_created = 0
            report.results.clear()
            transaction.set_rollback(True)
        elif any(r.outcome != "unchanged" for r in report.results):
            # Once for the whole import, and only when it wrote something: a retried step whose
            # groups are all unchanged leaves every cached statistic valid.
            data_changed()
    event = {
        "event": "import.failed" if report.rolled_back else "import.done",
        "groups": len(report.results),
        "groups_created": report.count("created") if not report.rolled_back else 0,
        "groups_completed": report.count("completed"),
        "attempts_read": report.attempts_read,
        "attempts_created": report.attempts_created,
        "attempts_passing": report.attempts_passing,
        "problems": len(report.problems),
        "no_source_tasks": len(report.no_source),
        "duration_ms": round((time.monotonic() - started) * 1000),
    }
    if report.rolled_back:
        logger.warning("import rolled back", extra=event)
        raise ImportFailedError(report)
    logger.info("import done", extra=event)
    return report


def _second_group(record: GroupRecord, first: int | None) -> ImportProblem:
    where = f"on line {first}" if first is not None else "earlier in this input"
    return ImportProblem(
        record.source,
        record.line,
        "$.task.id" if record.task is not None else "$.task_id",
        f"task {record.task_id!r} in {record.run!r} step {record.step} has a group {where} "
        "already: one group per task and step",
    )


def _note(report: ImportReport, problem: ImportProblem) -> None:
    if len(report.problems) < MAX_REPORTED_PROBLEMS:
        report.problems.append(problem)


def group_write(
    *,
    record: GroupRecord,
    replace: bool,
    repo_folders: Sequence[Path] = (),
    report: ImportReport | None = None,
) -> tuple[GroupResult, int]:
    with _writing("$.run"):
        run, _ = Run.objects.get_or_create(name=record.run)
    with _writing("$.step"):
        step, _ = Step.objects.get_or_create(run=run, number=record.step)
    with _writing("$.task" if record.task is not None else "$.task_id"):
        task = _task_for(record, replace=replace)
    task_source_check(task=task, folders=repo_folders)
    if report is not None:
        report.note_source(task)
    content_hash = record.content_hash
    outcome: Outcome = "created"
    existing = Group.objects.filter(step=step, task=task).first()
    if existing is not None:
        if existing.content_hash == content_hash:
            notes = _test_outputs_complete(existing, record)
            result = _result(existing, record, "completed" if notes else "unchanged")
            result.notes = notes
            return result, 0
        if not replace:
            raise _Conflict(
                f"group for task {task.external_id!r} in {run.name!r} step {step.number} already "
                f"exists with different content ({_REPLACE_HINT})"
            )
        existing.delete()
        outcome = "replaced"
    if record.external_id:
        clash = Group.objects.filter(external_id=record.external_id).first()
        if clash is not None:
            raise _Conflict(
                f"group_id {record.external_id!r} already names the group of task "
                f"{clash.task.external_id!r} in step {clash.step_id}"
            )
    with _writing("$"):
        group = Group.objects.create(
            step=step,
            task=task,
            external_id=record.external_id,
            content_hash=content_hash,
            metadata=record.metadata,
        )
    attempts_written = _attempts_write(group, record)
    return _result(group, record, outcome), attempts_written


def _test_outputs_complete(group: Group, record: GroupRecord) -> list[ImportNote]:
    """Rewrite in place each stored test output of the group that was cut when this import
    keeps more of it (the group's content, so each attempt's whole output, is the same);
    one note per attempt rewritten. One query when nothing is stored cut (the usual case)."""
    cut = list(
        Attempt.objects.filter(group=group, test_output_dropped__gt=0).only(
            "pk", "external_id", "test_output_dropped"
        )
    )
    if not cut:
        return []
    specs = {spec.external_id: (index, spec) for index, spec in enumerate(record.attempts)}
    notes = []
    for stored in cut:
        # The same content: the same attempts (an id is never edited, but a row that is not
        # the record's is left as it is).
        index, spec = specs.get(stored.external_id, (-1, None))
        fuller = spec.fuller_test_output(stored.test_output_dropped) if spec else None
        if spec is None or fuller is None:
            continue
        with _writing(f"$.attempts[{index}].test_output"):
            # Conditional, so a concurrent import that stored even more is never cut back.
            written = Attempt.objects.filter(
                pk=stored.pk, test_output_dropped__gt=fuller.dropped
            ).update(**_test_output_columns(fuller))
        if written:
            notes.append(_completed_note(record, spec, stored.test_output_dropped, fuller))
    return notes


def _completed_note(
    record: GroupRecord, spec: AttemptRecord, was_dropped: int, fuller: KeptOutput
) -> ImportNote:
    source, line = (
        (str(spec.test_output_file.path), None)
        if spec.test_output_file is not None
        else (record.source, record.line)
    )
    done = (
        "is stored whole now"
        if fuller.whole
        else f"keeps {was_dropped - fuller.dropped:,} more bytes now ({fuller.dropped:,} "
        f"still dropped; raise {TEST_OUTPUT_SETTING} to keep it whole)"
    )
    return ImportNote(
        source,
        line,
        f"the test output of attempt {spec.external_id!r} (task {record.task_id!r}, "
        f"{record.run!r} step {record.step}), stored cut ({was_dropped:,} bytes dropped), {done}: "
        "rewritten in place from this import, the group, its reviews and grades kept",
    )


def _test_output_columns(kept: KeptOutput) -> dict[str, Any]:
    return {
        "test_output_z": compress(kept.data) if kept.data else b"",
        "test_output_size": len(kept.data),
        "test_output_dropped": kept.dropped,
    }


def _result(group: Group, record: GroupRecord, outcome: Outcome) -> GroupResult:
    return GroupResult(
        group_id=group.pk,
        external_id=group.external_id,
        run=record.run,
        step=record.step,
        task=record.task_id,
        outcome=outcome,
    )


def _task_for(record: GroupRecord, *, replace: bool) -> Task:
    existing = Task.objects.filter(external_id=record.task_id).first()
    if record.task is None:
        if existing is None:
            raise ImportProblemError(
                ImportProblem(
                    record.source, record.line, "$.task_id", f"unknown task {record.task_id!r}"
                )
            )
        return existing
    spec = record.task
    if existing is not None and not spec.repo_url and existing.repo_url:
        # A record that does not say where the repository is (the project's sample file, whose
        # copy `manage.py demo` imported with the local clone's path) is the stored task: its
        # location is kept, so importing the file again is a no-op, not a conflict. Changed
        # in place so the group's content hash (which covers its task's) agrees too.
        spec.repo_url = existing.repo_url
    if existing is not None:
        if existing.content_hash == spec.content_hash:
            return existing
        if not replace:
            raise _Conflict(
                f"task {spec.external_id!r} already exists with different content ({_REPLACE_HINT})"
            )
    values = _task_values(spec)
    if existing is not None:
        for key, value in values.items():
            setattr(existing, key, value)
        existing.save()
        return existing
    return Task.objects.create(external_id=spec.external_id, **values)


def _task_values(spec: TaskRecord) -> dict[str, object]:
    patches = patches_get_or_create([p for p in (spec.test_patch, spec.gold_patch) if p])
    return {
        "repo": spec.repo,
        "repo_url": spec.repo_url,
        "base_commit": spec.base_commit,
        "problem_statement": spec.problem_statement,
        "fail_to_pass": spec.fail_to_pass,
        "pass_to_pass": spec.pass_to_pass,
        "test_command": spec.test_command,
        "test_patch": patches[spec.test_patch.stats.sha256] if spec.test_patch else None,
        "gold_patch": patches[spec.gold_patch.stats.sha256] if spec.gold_patch else None,
        "metadata": spec.metadata,
        "content_hash": spec.content_hash,
        # New content may name another repository or commit: looked up again after the write.
        "source_status": Task.Source.UNCHECKED,
        "source_path": "",
    }


def patches_get_or_create(records: list[PatchRecord]) -> dict[str, Patch]:
    """Store each distinct patch once; safe against a concurrent import of the same bytes."""
    by_hash = {r.stats.sha256: r for r in records}
    found = {p.sha256: p for p in Patch.objects.filter(sha256__in=by_hash)}
    missing = [r for sha, r in by_hash.items() if sha not in found]
    if missing:
        Patch.objects.bulk_create(
            [
                Patch(
                    sha256=r.stats.sha256,
                    content=r.content,
                    size=r.stats.size,
                    files_changed=len(r.stats.files),
                    hunks=r.stats.hunks,
                    lines_added=r.stats.lines_added,
                    lines_removed=r.stats.lines_removed,
                    has_binary=r.stats.has_binary,
                    touches_tests=r.stats.touches_tests,
                )
                for r in missing
            ],
            ignore_conflicts=True,
        )
        created = {
            p.sha256: p for p in Patch.objects.filter(sha256__in=[r.stats.sha256 for r in missing])
        }
        # A concurrent import of the same patch writes the same (patch, index) rows: ignored.
        new_files = [
            PatchFile(
                patch=created[r.stats.sha256],
                index=i,
                source_path=f.source_path[:1024],
                target_path=f.target_path[:1024],
                change=f.change,
                is_binary=f.is_binary,
                is_test=f.is_test,
                hunks=f.hunks,
                lines_added=f.lines_added,
                lines_removed=f.lines_removed,
            )
            for r in missing
            for i, f in enumerate(r.stats.files)
        ]
        PatchFile.objects.bulk_create(new_files, ignore_conflicts=True)
        found.update(created)
    return found


def _attempts_write(group: Group, record: GroupRecord) -> int:
    with _writing("$.attempts[*].patch"):
        patches = patches_get_or_create([a.patch for a in record.attempts if a.patch])
    rows = [_attempt_row(group, index, a, patches) for index, a in enumerate(record.attempts)]
    try:
        with transaction.atomic():
            attempts = Attempt.objects.bulk_create(rows)
    except (OperationalError, InterfaceError, ProgrammingError):
        raise
    except DatabaseError as exc:
        _attempt_refused(rows, record)
        raise _DatabaseRefused("$.attempts", exc) from exc
    if attempts and attempts[0].pk is None:  # backends without RETURNING ids
        attempts = list(Attempt.objects.filter(group=group).order_by("index"))
    for index, (attempt, spec) in enumerate(zip(attempts, record.attempts, strict=True)):
        if spec.trajectory is not None:
            with _writing(f"$.attempts[{index}].trajectory"):
                trajectory_store(
                    attempt=attempt,
                    format=spec.trajectory.format,
                    events=spec.trajectory.open_events(),
                    content_hash=spec.trajectory.content_hash,
                )
    return len(attempts)


def _attempt_refused(rows: list[Attempt], record: GroupRecord) -> None:
    """The attempts' one INSERT was refused: find the attempt, one savepoint each (the group's
    savepoint undoes them all), and raise the problem at its field."""
    for index, (row, spec) in enumerate(zip(rows, record.attempts, strict=True)):
        try:
            with _writing(f"$.attempts[{index}]"), transaction.atomic():
                row.save(force_insert=True)
        except _DatabaseRefused as exc:
            exc.message = f"attempt {spec.external_id!r}: {exc.message}"
            raise


def _attempt_row(
    group: Group, index: int, spec: AttemptRecord, patches: dict[str, Patch]
) -> Attempt:
    return Attempt(
        group=group,
        external_id=spec.external_id,
        index=index,
        status=spec.status,
        test_reward=spec.test_reward,
        test_report=spec.test_report,
        **_test_output_columns(spec.read_test_output()),
        patch=patches[spec.patch.stats.sha256] if spec.patch else None,
        num_turns=spec.num_turns,
        tokens_in=spec.tokens_in,
        tokens_out=spec.tokens_out,
        agent_system=spec.agent_system[:255],
        agent_model=spec.agent_model[:255],
        agent_family=spec.agent_family[:255],
        agent_metadata=spec.agent_metadata,
    )
