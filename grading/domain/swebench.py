"""Read SWE-bench style inputs into group records: one group per instance.

Inputs: task records (JSONL or a JSON array), and per system a predictions file (JSONL, a JSON
array of {instance_id, model_name_or_path, model_patch}, or SWE-agent's `preds.json` object
keyed by instance id), an evaluation report (any shape of `swebench_reports`), per-instance logs
(report.json + test_output.txt) and a folder of trajectories named after the instance. A run
folder (`run_folders`) names all of these itself. Files are read by `jsonfiles`.
"""

from __future__ import annotations

import errno
import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import ijson

from grading.domain import safe_json
from grading.domain.jsonfiles import JsonReader, JsonRow
from grading.domain.patches import PatchParseError, patch_stats, surrogate_problem
from grading.domain.records import (
    AttemptRecord,
    GroupRecord,
    ImportNote,
    ImportProblem,
    ImportProblemError,
    PatchRecord,
    TaskRecord,
    TrajectoryRecord,
    find_nul,
    id_problem,
    patch_names_problem,
)
from grading.domain.sidecar import file_sha256, stream_file_events
from grading.domain.swebench_reports import Report, read_instance_logs, read_report
from grading.domain.test_outputs import DEFAULT_MAX_TEST_OUTPUT_BYTES, TestOutputFile
from grading.domain.trajectories import TrajectoryFormatError, detect_format
from grading.domain.wording import shown

_TASK_REQUIRED = ("instance_id", "repo", "problem_statement")
_TASK_META = ("version", "environment_setup_commit", "hints_text", "created_at")
# The bounded columns these land in (Task.external_id, repo, …): refused when longer, here and
# the same on every database, rather than truncated or failing at write time.
_TASK_MAX_CHARS = {
    "instance_id": 255,
    "repo": 255,
    "repo_url": 1024,
    "base_commit": 64,
    "test_cmd": 1024,
}
# Attempt.external_id and agent_* (label, model, family).
_MAX_NAME_CHARS = 255


@dataclass(frozen=True)
class SystemSource:
    predictions: Path
    report: Path | None = None
    label: str | None = None
    trajectories: Path | None = None
    # Per-instance `<id>/report.json` and `<id>/test_output.txt` (a run folder's `logs/`); they
    # take precedence over the run-level `report` for the instances they cover.
    logs: Path | None = None


def _fail(
    row_or_source: JsonRow | str, field: str, message: str, line: int | None = None
) -> ImportProblemError:
    if isinstance(row_or_source, JsonRow):
        row = row_or_source
        return ImportProblemError(
            ImportProblem(row.source, row.line_for(field), row.field + field, message)
        )
    return ImportProblemError(ImportProblem(row_or_source, line, field, message))


def _quote(value: str) -> str:
    """A value quoted in a message, cut short: a message must not repeat a megabyte back."""
    return shown(value)


def _text_problem(value: object, limit: int) -> str | None:
    if not isinstance(value, str):
        return None
    if "\x00" in value:
        return "NUL characters are not allowed here"
    if len(value) > limit:
        return f"longer than {limit} characters"
    return None


def _test_list(row: JsonRow, key: str) -> list[str]:
    value = row.value.get(key, [])
    if isinstance(value, str):  # the Hugging Face dataset stores these as JSON strings
        try:
            value = safe_json.loads(value)
        except (json.JSONDecodeError, safe_json.JsonLimitError) as exc:
            raise _fail(row, f".{key}", "neither a list nor a JSON-encoded list") from exc
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise _fail(row, f".{key}", "must be a list of test ids")
    # The JSON-encoded shape hides a NUL as an escape until it is decoded here.
    nul = find_nul(value, f".{key}")
    if nul:
        raise _fail(row, nul, "NUL characters are not allowed here")
    return value


def _patch(row: JsonRow, key: str) -> PatchRecord | None:
    text = row.value.get(key)
    if text is None or (isinstance(text, str) and not text.strip()):
        return None
    if not isinstance(text, str):
        raise _fail(row, f".{key}", "must be a string")
    data = text.encode("utf-8", "surrogatepass")
    problem = surrogate_problem(data)
    if problem:
        raise _fail(row, f".{key}", problem)
    try:
        stats = patch_stats(data)
    except PatchParseError as exc:
        raise _fail(row, f".{key}", f"not a unified diff unidiff can read: {exc}") from exc
    problem = patch_names_problem(stats)
    if problem:
        raise _fail(row, f".{key}", problem)
    return PatchRecord(data, stats)


def read_tasks(path: Path, reader: JsonReader | None = None) -> dict[str, TaskRecord]:
    tasks: dict[str, TaskRecord] = {}
    for row in (reader or JsonReader()).rows(path):
        if not isinstance(row.value, dict):
            raise _fail(row, "", "a task record must be an object")
        for key in _TASK_REQUIRED:
            if not isinstance(row.value.get(key), str) or not row.value[key]:
                raise _fail(row, f".{key}", "required string is missing")
        nul = find_nul(row.value, "")
        if nul and not nul.startswith((".patch", ".test_patch")):
            raise _fail(row, nul, "NUL characters are not allowed here")
        for key, limit in _TASK_MAX_CHARS.items():
            problem = _text_problem(row.value.get(key), limit)
            if problem:
                raise _fail(row, f".{key}", problem)
        instance_id = row.value["instance_id"]
        problem = id_problem(instance_id)
        if problem:
            raise _fail(row, ".instance_id", problem)
        if instance_id in tasks:
            raise _fail(row, ".instance_id", f"duplicate task {shown(instance_id)}")
        tasks[instance_id] = TaskRecord(
            external_id=instance_id,
            repo=row.value["repo"],
            repo_url=row.value.get("repo_url", ""),
            base_commit=row.value.get("base_commit", ""),
            problem_statement=row.value["problem_statement"],
            fail_to_pass=_test_list(row, "FAIL_TO_PASS"),
            pass_to_pass=_test_list(row, "PASS_TO_PASS"),
            test_command=row.value.get("test_cmd", ""),
            test_patch=_patch(row, "test_patch"),
            gold_patch=_patch(row, "patch"),
            metadata={k: row.value[k] for k in _TASK_META if k in row.value},
        )
    if not tasks:
        raise _fail(str(path), "", "no task records (the file is empty, blank or an empty list)")
    return tasks


def _is_file(path: Path) -> bool:
    # A 255-character id is a valid instance id but, with ".traj" added, longer than a file
    # name can be: no such file can exist, so there is none to find (not a crash).
    try:
        return path.is_file()
    except OSError as exc:
        if exc.errno == errno.ENAMETOOLONG:
            return False
        raise


def _is_dir(path: Path) -> bool:
    try:
        return path.is_dir()
    except OSError as exc:
        if exc.errno == errno.ENAMETOOLONG:
            return False
        raise


def _plain_relative(name: str) -> bool:
    """Whether a name can be a path inside a folder: `..` or an absolute name (which replaces
    the folder) would read files outside it, and `a/.` or `a//b` would alias another's."""
    relative = Path(name)
    return not relative.is_absolute() and ".." not in relative.parts and str(relative) == name


def _trajectory_for(
    folder: Path | None, instance_id: str, row: JsonRow, label: str
) -> TrajectoryRecord | None:
    if folder is None:
        return None
    if not _plain_relative(instance_id):
        raise _fail(
            row,
            ".instance_id",
            f"{_quote(instance_id)} cannot name a trajectory inside {folder}: "
            "it is not a plain relative path",
        )
    source = row.source
    # A folder of several systems' trajectories keeps each system's in a subfolder named
    # after it (`trajectories/swe-agent/cost_2_1/<id>.traj` for the system of that label).
    folders = [folder / label] if _plain_relative(label) and _is_dir(folder / label) else []
    candidates = [
        path
        for where in [*folders, folder]
        for path in (
            where / f"{instance_id}.traj",
            where / f"{instance_id}.json",
            *sorted((where / instance_id).glob("*.json")),
        )
    ]
    path = next((p for p in candidates if _is_file(p)), None)
    if path is None:
        return None
    try:
        with path.open("rb") as handle:
            head = handle.read(1 << 20)
        fmt = detect_format(safe_json.loads(head)) if len(head) < (1 << 20) else None
    except (
        json.JSONDecodeError,
        UnicodeDecodeError,
        TrajectoryFormatError,
        safe_json.JsonLimitError,
    ) as exc:
        raise _fail(source, "trajectory", f"{path}: {exc}") from exc
    fmt_name = str(fmt) if fmt else "swe-agent"
    return TrajectoryRecord(
        format=fmt_name,
        open_events=lambda: stream_file_events(path, fmt_name, source, None, "trajectory"),
        content_hash=file_sha256(path),
        file=path,
    )


def read_groups(
    *,
    tasks_path: Path,
    systems: list[SystemSource],
    run: str,
    step: int,
    reader: JsonReader | None = None,
    notes: Iterable[ImportNote] = (),
    max_test_output_bytes: int = DEFAULT_MAX_TEST_OUTPUT_BYTES,
) -> Iterator[GroupRecord | ImportProblem | ImportNote]:
    """One group per instance that has at least one prediction, in task-file order; then the
    notes (repairs made, missing reports, test outputs cut to `max_test_output_bytes`)."""
    reader = reader or JsonReader()
    yield from notes
    try:
        tasks = read_tasks(tasks_path, reader)
    except ImportProblemError as exc:
        yield exc.problem
        return
    per_instance: dict[str, list[AttemptRecord]] = {i: [] for i in tasks}
    labels_seen: set[str] = set()
    for system in systems:
        try:
            yield from _system_attempts(
                system, tasks, per_instance, labels_seen, reader, max_test_output_bytes
            )
        except ImportProblemError as exc:
            yield exc.problem
    yield from trajectories_attach_once(per_instance)
    for instance_id, attempts in per_instance.items():
        if attempts:
            yield GroupRecord(
                source=str(tasks_path),
                line=None,
                run=run,
                step=step,
                task_id=instance_id,
                task=tasks[instance_id],
                external_id=None,
                attempts=attempts,
                metadata={"import": "swebench"},
            )
    yield from reader.notes


def trajectories_attach_once(
    per_instance: dict[str, list[AttemptRecord]],
) -> Iterator[ImportNote]:
    """One trajectory file goes to one attempt: its own system's. Systems sharing a folder
    each find the instance's file by its name; the file belongs to the system its folder is
    named after, else to the one it names itself (Moatless's `info.evaluation_name`), else to
    the one whose patch it submitted (`info.submission`). A file none of these rules gives to
    exactly one attempt is attached to none, with a note."""
    for instance_id, attempts in per_instance.items():
        claims: dict[Path, list[int]] = {}
        for index, attempt in enumerate(attempts):
            if attempt.trajectory is not None and attempt.trajectory.file is not None:
                claims.setdefault(attempt.trajectory.file, []).append(index)
        for path, indexes in claims.items():
            if len(indexes) < 2:
                continue
            owner = _trajectory_owner(path, instance_id, [attempts[i] for i in indexes])
            for i in indexes:
                if attempts[i] is not owner:
                    attempts[i] = replace(attempts[i], trajectory=None)
            if owner is None:
                systems = ", ".join(_quote(attempts[i].agent_system) for i in indexes[:5])
                yield ImportNote(
                    str(path),
                    None,
                    f"this trajectory of {_quote(instance_id)} is in the folder of "
                    f"{len(indexes)} systems ({systems}) and says whose it is for none of "
                    "them alone: attached to none (give each system its own folder, or a "
                    "subfolder named after its label)",
                )


def _trajectory_owner(
    path: Path, instance_id: str, attempts: list[AttemptRecord]
) -> AttemptRecord | None:
    folder = path.parent.parent if path.parent.name == instance_id else path.parent
    name, submission = _declared(path)

    def named_folder(a: AttemptRecord) -> bool:
        parts = Path(a.agent_system).parts
        return bool(parts) and folder.parts[-len(parts) :] == parts

    def named_itself(a: AttemptRecord) -> bool:
        return name is not None and name in (a.agent_system, a.agent_model)

    def submitted(a: AttemptRecord) -> bool:
        return (
            submission is not None
            and a.patch is not None
            and a.patch.content.strip() == submission.encode("utf-8", "surrogatepass").strip()
        )

    pool = attempts
    for rule in (named_folder, named_itself, submitted):
        hits = [a for a in pool if rule(a)]
        if len(hits) == 1:
            return hits[0]
        pool = hits or pool
    return None


def _declared(path: Path) -> tuple[str | None, str | None]:
    """The system name and the patch a trajectory file declares in its `info` (SWE-agent,
    CodeR and Moatless files have one), read streaming; (None, None) when it has none."""
    try:
        with path.open("rb") as handle:
            info = next(ijson.items(handle, "info"), None)
    except (ijson.JSONError, UnicodeDecodeError, OSError):
        return None, None
    if not isinstance(info, dict):
        return None, None
    name, submission = info.get("evaluation_name"), info.get("submission")
    return (
        name if isinstance(name, str) and name else None,
        submission if isinstance(submission, str) and submission.strip() else None,
    )


def _system_report(system: SystemSource, reader: JsonReader) -> Report | None:
    run_level = read_report(system.report, reader) if system.report else None
    if system.logs is None:
        return run_level
    return read_instance_logs(system.logs, reader).over(run_level)


def _prediction_rows(path: Path, reader: JsonReader) -> Iterator[JsonRow]:
    """Prediction records: one per line or array item, or the values of SWE-agent's
    `preds.json`, an object keyed by instance id."""
    for row in reader.rows(path):
        value = row.value
        if row.key_lines and isinstance(value, dict) and "instance_id" not in value:
            for key, item in value.items():
                if isinstance(item, dict) and "instance_id" not in item:
                    item = {**item, "instance_id": key}
                elif isinstance(item, dict) and item["instance_id"] != key:
                    raise _fail(
                        row, f".{key}.instance_id", f"is not the key it is under ({shown(key)})"
                    )
                yield JsonRow(row.source, row.key_lines.get(key), f"$.{key}", item)
            continue
        yield row


def _system_attempts(
    system: SystemSource,
    tasks: dict[str, TaskRecord],
    per_instance: dict[str, list[AttemptRecord]],
    labels_seen: set[str],
    reader: JsonReader,
    max_test_output_bytes: int,
) -> Iterator[ImportProblem | ImportNote]:
    if system.label is not None:
        problem = _text_problem(system.label, _MAX_NAME_CHARS)
        if problem:
            raise _fail(str(system.predictions), "--label", problem)
    report = _system_report(system, reader)
    seen_here: set[str] = set()
    rows = 0
    for row in _prediction_rows(system.predictions, reader):
        rows += 1
        try:
            attempt = _prediction(
                row, system, tasks, per_instance, report, seen_here, labels_seen,
                max_test_output_bytes,
            )  # fmt: skip
        except ImportProblemError as exc:
            yield exc.problem
            continue
        output = attempt.test_output_file
        if output is not None and output.truncated():
            yield ImportNote(str(output.path), None, output.note())
    if not rows:
        yield ImportProblem(
            str(system.predictions),
            None,
            "",
            "no predictions (the file is empty, blank or an empty list)",
        )
    labels_seen.update(seen_here)
    if report is not None:
        # A report for instances the tasks do not hold is likely the wrong report or tasks.
        stray = sorted(set(report.evaluations) - set(tasks))
        if stray:
            names = ", ".join(_quote(s) for s in stray[:5])
            more = f" and {len(stray) - 5} more" if len(stray) > 5 else ""
            yield ImportNote(
                report.source,
                None,
                f"the report names {len(stray)} instance{'s' if len(stray) != 1 else ''} "
                f"not in the tasks: {names}{more} (ignored)",
            )


# The keys of a prediction as the SWE-bench harness reads them (SCHEMAS.md §1a): the two ids are
# non-empty strings; `model_patch` must be there, but may be "" or null (nothing generated).
_PREDICTION_KEYS = ("instance_id", "model_name_or_path", "model_patch")


def _required_prediction_fields(row: JsonRow, value: dict[str, Any]) -> None:
    """Every required field that is missing or wrong, in one problem (not the first only)."""
    wrong: dict[str, str] = {}
    for key in _PREDICTION_KEYS:
        if key not in value:
            wrong[key] = f"{key} is missing"
        elif key != "model_patch" and (not isinstance(value[key], str) or not value[key]):
            wrong[key] = f"{key} must be a non-empty string, found {shown(value[key])}"
    if not wrong:
        return
    raise _fail(
        row,
        f".{next(iter(wrong))}" if len(wrong) == 1 else "",
        f'a prediction needs {", ".join(_PREDICTION_KEYS)} (model_patch may be null or "" '
        f"when nothing was generated): {'; '.join(wrong.values())}",
    )


# Kept whole (C901): one prediction row's field checks, in the order its messages name them.
def _prediction(  # noqa: C901
    row: JsonRow,
    system: SystemSource,
    tasks: dict[str, TaskRecord],
    per_instance: dict[str, list[AttemptRecord]],
    report: Report | None,
    seen_here: set[str],
    labels_seen: set[str],
    max_test_output_bytes: int,
) -> AttemptRecord:
    """The attempt of one prediction row, added to its instance's."""
    value = row.value
    if not isinstance(value, dict):
        raise _fail(row, "", "a prediction must be an object")
    _required_prediction_fields(row, value)
    instance_id = value["instance_id"]
    model = value["model_name_or_path"]
    # The patch is stored as bytes; the other fields go to text columns.
    nul = find_nul({k: v for k, v in value.items() if k != "model_patch"}, "")
    if nul:
        raise _fail(row, nul, "NUL characters are not allowed here")
    for key in ("model_name_or_path", "agent_family"):
        problem = _text_problem(value.get(key), _MAX_NAME_CHARS)
        if problem:
            raise _fail(row, f".{key}", problem)
    for key, text in (("instance_id", instance_id), ("model_name_or_path", model)):
        problem = id_problem(text)
        if problem:
            raise _fail(row, f".{key}", problem)
    if instance_id not in tasks:
        raise _fail(row, ".instance_id", f"no task record for {_quote(instance_id)}")
    label = system.label or model
    if label in labels_seen:
        raise _fail(
            row,
            ".model_name_or_path",
            f"system {shown(label)} already came from another predictions file; give each a label",
        )
    key = f"{label}\x00{instance_id}"
    if key in seen_here:
        raise _fail(
            row, ".instance_id", f"duplicate prediction for {shown(instance_id)} by {shown(label)}"
        )
    seen_here.add(key)
    evaluation = None
    if report is not None:
        evaluation = report.get(instance_id)
        if evaluation is None:
            raise _fail(row, ".instance_id", report.no_result(instance_id))
    status = "infra_failed" if evaluation and evaluation.infra_failed else "valid"
    patch = _patch(row, "model_patch")
    if patch is None and status == "valid" and evaluation is not None and evaluation.resolved:
        # An attempt with no patch cannot be a passing candidate: there is nothing to review.
        raise _fail(
            row,
            ".model_patch",
            f"no patch, but {report.source if report else 'the report'} resolves "
            f"{_quote(instance_id)}: an attempt without a patch cannot pass",
        )
    output_file = evaluation.test_output if evaluation else None
    attempt = AttemptRecord(
        external_id=label,
        status=status,
        test_reward=1.0 if evaluation and evaluation.resolved else 0.0,
        test_report=evaluation.report if evaluation else {},
        test_output=b"",
        test_output_file=(
            TestOutputFile(output_file, max_test_output_bytes) if output_file else None
        ),
        patch=patch,
        trajectory=_trajectory_for(system.trajectories, instance_id, row, label),
        num_turns=None,
        tokens_in=None,
        tokens_out=None,
        agent_system=label,
        agent_model=model,
        agent_family=str(value.get("agent_family", "")),
    )
    per_instance[instance_id].append(attempt)
    return attempt
