"""Read a `gagar.group.v1` bundle (JSON Lines, one group per line) into records.

Each line is validated against `docs/formats/gagar.group.v1.schema.json`, then checked for what a
schema cannot say (duplicate attempt ids, diffs unidiff cannot read, NUL in text columns, sidecar
paths that leave the bundle's folder). Problems name the file, the line and the field.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import io
import json
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from typing import IO, Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import ValidationError

from grading.domain import safe_json
from grading.domain.jsonfiles import BOM, DEFAULT_MAX_LINE_BYTES, read_line
from grading.domain.patches import PatchParseError, patch_stats, surrogate_problem
from grading.domain.records import (
    AttemptRecord,
    GroupRecord,
    ImportProblem,
    ImportProblemError,
    PatchRecord,
    TaskRecord,
    TrajectoryRecord,
    canonical_hash,
    find_nul,
    id_problem,
    patch_names_problem,
)
from grading.domain.sidecar import file_sha256, stream_file_events
from grading.domain.test_outputs import DEFAULT_MAX_TEST_OUTPUT_BYTES, bounded
from grading.domain.trajectories import TrajectoryFormatError, events_from_object

SCHEMA_PATH = (
    Path(__file__).resolve().parents[2] / "docs" / "formats" / "gagar.group.v1.schema.json"
)
DEFAULT_MAX_PATCH_BYTES = 5 * 1024 * 1024


@cache
def _validator() -> Draft202012Validator:
    schema = json.loads(SCHEMA_PATH.read_text())
    return Draft202012Validator(schema)


def _json_path(error: ValidationError) -> str:
    path = "$"
    for part in error.absolute_path:
        path += f"[{part}]" if isinstance(part, int) else f".{part}"
    return path


def _message(error: ValidationError) -> str:
    if error.validator == "not":
        return "give patch or patch_base64 (and test_output or test_output_base64), not both"
    if error.validator == "oneOf" and not error.absolute_path:
        return "give either task (a task object) or task_id (an existing task), not both"
    # jsonschema quotes the offending value; a 50 MB value must not become a 50 MB message, but
    # what is wrong with it (the end of the message) must survive the cut.
    if error.validator == "maxItems" and isinstance(error.instance, list):
        # The list itself would be quoted whole: say how long it is and what the limit is.
        return (
            f"too many items: {len(error.instance)} (at most {error.validator_value}); "
            "split the group or send fewer attempts"
        )
    message = error.message
    quoted = repr(error.instance)
    if len(message) > 300 and message.startswith(quoted):
        message = quoted[:60] + "…" + message[len(quoted) :]
    if error.validator == "maxLength":
        message += f" (at most {error.validator_value} characters)"
    return message if len(message) <= 300 else message[:300] + "…"


def _best_error(errors: list[ValidationError]) -> ValidationError:
    # The deepest error points at the field to fix; `oneOf` wrappers are less useful.
    return max(errors, key=lambda e: (len(e.absolute_path), -len(e.context or [])))


class BundleReader:
    """Iterates a bundle stream, yielding a record or a problem per non-blank line."""

    def __init__(
        self,
        stream: IO[bytes],
        *,
        source: str,
        base_dir: Path | None,
        max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
        max_patch_bytes: int = DEFAULT_MAX_PATCH_BYTES,
        max_test_output_bytes: int = DEFAULT_MAX_TEST_OUTPUT_BYTES,
    ) -> None:
        self.stream = stream
        self.source = source
        # None: sidecar files are refused (API uploads have no folder).
        self.base_dir = base_dir.resolve() if base_dir else None
        self.max_line_bytes = max_line_bytes
        self.max_patch_bytes = max_patch_bytes
        self.max_test_output_bytes = max_test_output_bytes
        self.bytes_read = 0

    def __iter__(self) -> Iterator[GroupRecord | ImportProblem]:
        line_no = 0
        while True:
            raw, too_long = read_line(self.stream, self.max_line_bytes, first=line_no == 0)
            if not raw:
                return
            line_no += 1
            self.bytes_read += len(raw)
            if too_long:
                if not raw.endswith(b"\n"):
                    self._skip_rest_of_line()
                yield self._problem(
                    line_no,
                    "",
                    f"line is longer than {self.max_line_bytes} bytes (the limit is "
                    "GAGAR_MAX_LINE_BYTES); put large trajectories in sidecar files "
                    "(trajectory.path)",
                )
                continue
            if line_no == 1:
                raw = raw.removeprefix(BOM)  # Windows tools start UTF-8 files with one
            if not raw.strip():
                continue
            try:
                yield self.parse_line(raw, line_no)
            except ImportProblemError as exc:
                yield exc.problem

    def _skip_rest_of_line(self) -> None:
        while True:
            chunk = self.stream.readline(1024 * 1024)
            self.bytes_read += len(chunk)
            if not chunk or chunk.endswith(b"\n"):
                return

    def _problem(self, line: int | None, field: str, message: str) -> ImportProblem:
        return ImportProblem(self.source, line, field, message)

    def _fail(self, line: int | None, field: str, message: str) -> ImportProblemError:
        return ImportProblemError(self._problem(line, field, message))

    def parse_line(self, raw: bytes, line: int) -> GroupRecord:
        try:
            # Without its line break: a line cut off mid-value fails at its own end ("column
            # 38"), not at column 1 of the next line, which is what the decoder sees otherwise.
            text = raw.decode("utf-8").rstrip("\r\n")
        except UnicodeDecodeError as exc:
            raise self._fail(
                line, "", f"not UTF-8 (byte {exc.start}); send raw bytes as patch_base64"
            ) from exc
        try:
            obj = safe_json.decode(text)
        except json.JSONDecodeError as exc:
            raise self._fail(line, "", f"malformed JSON: {safe_json.error_text(exc)}") from exc
        except safe_json.JsonLimitError as exc:
            raise self._fail(line, exc.path, exc.message) from exc
        return self.parse_object(obj, line)

    def parse_object(self, obj: Any, line: int | None) -> GroupRecord:
        # Before the schema: a nesting bomb would exhaust the validator's recursion.
        try:
            safe_json.check(obj)
        except safe_json.JsonLimitError as exc:
            raise self._fail(line, exc.path, exc.message) from exc
        errors = list(_validator().iter_errors(obj))
        if errors:
            error = _best_error(errors)
            raise self._fail(line, _json_path(error), _message(error))
        # Identifiers go to text columns, which cannot hold a NUL on PostgreSQL: refuse it here,
        # the same on every database, rather than fail (or store it) at write time.
        ids = [(f"$.{key}", obj.get(key) or "") for key in ("run", "group_id", "task_id")]
        ids.append(("$.task.id", (obj.get("task") or {}).get("id") or ""))
        ids += [(f"$.attempts[{i}].id", item["id"]) for i, item in enumerate(obj["attempts"])]
        for field, value in ids:
            problem = id_problem(value)
            if problem:
                raise self._fail(line, field, problem)
        for key in ("metadata",):
            nul = find_nul(obj.get(key, {}), f"$.{key}")
            if nul:
                raise self._fail(line, nul, "NUL characters are not allowed here")
        task = self._task(obj["task"], line) if "task" in obj else None
        attempts: list[AttemptRecord] = []
        seen: dict[str, int] = {}
        for index, item in enumerate(obj["attempts"]):
            field = f"$.attempts[{index}]"
            if item["id"] in seen:
                raise self._fail(
                    line,
                    f"{field}.id",
                    f"duplicate attempt id {item['id']!r} (first at attempts[{seen[item['id']]}])",
                )
            seen[item["id"]] = index
            attempts.append(self._attempt(item, line, field))
        return GroupRecord(
            source=self.source,
            line=line,
            run=obj["run"],
            step=obj["step"],
            task_id=task.external_id if task else obj["task_id"],
            task=task,
            external_id=obj.get("group_id"),
            attempts=attempts,
            metadata=obj.get("metadata", {}),
        )

    def _task(self, obj: dict[str, Any], line: int | None) -> TaskRecord:
        for key in ("id", "repo", "repo_url", "base_commit", "problem_statement", "test_command"):
            if "\x00" in obj.get(key, ""):
                raise self._fail(line, f"$.task.{key}", "NUL characters are not allowed here")
        for key in ("fail_to_pass", "pass_to_pass", "metadata"):
            nul = find_nul(obj.get(key), f"$.task.{key}")
            if nul:
                raise self._fail(line, nul, "NUL characters are not allowed here")
        return TaskRecord(
            external_id=obj["id"],
            repo=obj["repo"],
            repo_url=obj.get("repo_url", ""),
            base_commit=obj.get("base_commit", ""),
            problem_statement=obj["problem_statement"],
            fail_to_pass=obj.get("fail_to_pass", []),
            pass_to_pass=obj.get("pass_to_pass", []),
            test_command=obj.get("test_command", ""),
            test_patch=self._patch(obj.get("test_patch") or None, line, "$.task.test_patch"),
            gold_patch=self._patch(obj.get("gold_patch") or None, line, "$.task.gold_patch"),
            metadata=obj.get("metadata", {}),
        )

    def _patch(self, value: str | bytes | None, line: int | None, field: str) -> PatchRecord | None:
        if value is None:
            return None
        data = value if isinstance(value, bytes) else value.encode("utf-8", "surrogatepass")
        if len(data) > self.max_patch_bytes:
            raise self._fail(
                line,
                field,
                f"the patch is {len(data)} bytes, over the limit of {self.max_patch_bytes} "
                "(GAGAR_MAX_PATCH_BYTES)",
            )
        problem = surrogate_problem(data)
        if problem:
            raise self._fail(line, field, problem)
        try:
            stats = patch_stats(data)
        except PatchParseError as exc:
            raise self._fail(line, field, f"not a unified diff unidiff can read: {exc}") from exc
        problem = patch_names_problem(stats)
        if problem:
            raise self._fail(line, field, problem)
        return PatchRecord(content=data, stats=stats)

    def _b64(self, value: str, line: int | None, field: str) -> bytes:
        try:
            return base64.b64decode(value, validate=True)
        except binascii.Error as exc:
            raise self._fail(line, field, f"invalid base64: {exc}") from exc

    def _attempt(self, obj: dict[str, Any], line: int | None, field: str) -> AttemptRecord:
        for key in ("test_report",):
            nul = find_nul(obj.get(key), f"{field}.{key}")
            if nul:
                raise self._fail(line, nul, "NUL characters are not allowed here")
        agent = obj.get("agent", {})
        nul = find_nul(agent, f"{field}.agent")
        if nul:
            raise self._fail(line, nul, "NUL characters are not allowed here")
        if "patch_base64" in obj:
            patch_bytes: bytes | None = self._b64(
                obj["patch_base64"], line, f"{field}.patch_base64"
            )
        else:
            text = obj.get("patch")
            patch_bytes = text.encode("utf-8", "surrogatepass") if text else None
        if "test_output_base64" in obj:
            output = self._b64(obj["test_output_base64"], line, f"{field}.test_output_base64")
        else:
            output = obj.get("test_output", "").encode("utf-8", "surrogatepass")
        # Kept, not refused: the attempt's label and patch are sound, and the output's start and
        # end (where failures are) are what graders read; the marker says what was dropped. The
        # group's identity stays what was sent (`test_output_sha256`), whatever the limit.
        sent = (
            hashlib.sha256(output).hexdigest() if len(output) > self.max_test_output_bytes else None
        )
        kept = bounded(output, self.max_test_output_bytes)
        if not patch_bytes and float(obj["test_reward"]) > 0:
            # An attempt with no patch cannot be a passing candidate: there is nothing to review.
            raise self._fail(
                line,
                f"{field}.patch",
                "an attempt without a patch cannot pass (test_reward > 0): send its patch, "
                "or a test_reward of 0",
            )
        trajectory = None
        if "trajectory" in obj:
            trajectory = self._trajectory(obj["trajectory"], line, f"{field}.trajectory")
        return AttemptRecord(
            external_id=obj["id"],
            status=obj.get("status", "valid"),
            test_reward=float(obj["test_reward"]),
            test_report=obj.get("test_report", {}),
            test_output=kept.data,
            test_output_sha256=sent,
            test_output_dropped=kept.dropped,
            patch=self._patch(patch_bytes, line, f"{field}.patch") if patch_bytes else None,
            trajectory=trajectory,
            num_turns=obj.get("num_turns"),
            tokens_in=obj.get("tokens_in"),
            tokens_out=obj.get("tokens_out"),
            agent_system=agent.get("system", ""),
            agent_model=agent.get("model", ""),
            agent_family=agent.get("family", ""),
            agent_metadata=agent.get("metadata", {}),
        )

    def _trajectory(self, obj: dict[str, Any], line: int | None, field: str) -> TrajectoryRecord:
        fmt = obj["format"]
        if "path" in obj:
            path = self._sidecar(obj["path"], line, f"{field}.path")
            return TrajectoryRecord(
                format=fmt,
                open_events=lambda: stream_file_events(path, fmt, self.source, line, field),
                content_hash=file_sha256(path),
            )
        document = obj.get("events", obj.get("messages", obj.get("data")))
        try:
            # Parse now: an inline trajectory is already in memory, and errors surface early.
            events = [event.to_json() for event in events_from_object(document, fmt)]
        except TrajectoryFormatError as exc:
            raise self._fail(line, field, str(exc)) from exc
        return TrajectoryRecord(
            format=fmt, open_events=lambda: iter(events), content_hash=canonical_hash(events)
        )

    def _sidecar(self, relative: str, line: int | None, field: str) -> Path:
        if self.base_dir is None:
            raise self._fail(line, field, "sidecar files are not accepted here; inline the events")
        candidate = Path(relative)
        if candidate.is_absolute() or ".." in candidate.parts:
            raise self._fail(line, field, f"{relative!r} must be a relative path inside the bundle")
        resolved = (self.base_dir / candidate).resolve()
        if not resolved.is_relative_to(self.base_dir):
            raise self._fail(line, field, f"{relative!r} leaves the bundle's folder")
        if not resolved.is_file():
            raise self._fail(line, field, f"{relative!r} does not exist")
        return resolved


def group_from_object(obj: Any, *, source: str, base_dir: Path | None = None) -> GroupRecord:
    """Validate one already-parsed group (sample data, tests); raises ImportProblemError."""
    return BundleReader(io.BytesIO(b""), source=source, base_dir=base_dir).parse_object(obj, None)
