"""Plain records every importer produces and the import service writes.

Importers (native bundle, SWE-bench) parse and validate into these; nothing here touches the
database, so a whole file can be checked before anything is written.
"""

from __future__ import annotations

import hashlib
import json
import re
import unicodedata
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from grading.domain.patches import PatchStats
from grading.domain.test_outputs import KeptOutput, TestOutputFile
from grading.domain.wording import shown, string_path

# PatchFile.source_path / target_path are 1,024-character columns.
MAX_PATH_CHARS = 1024


@dataclass(frozen=True)
class ImportProblem:
    """One thing wrong with the input, located well enough to fix it."""

    source: str
    line: int | None
    field: str
    message: str

    def __str__(self) -> str:
        where = self.source if self.line is None else f"{self.source}:{self.line}"
        text = f"{self.field}: {self.message}" if self.field else self.message
        return f"{where}: {text}" if where else text


@dataclass(frozen=True)
class ImportNote:
    """Something the importer did or noticed that the user should know; not a problem."""

    source: str
    line: int | None
    message: str

    def __str__(self) -> str:
        where = self.source if self.line is None else f"{self.source}:{self.line}"
        return f"{where}: {self.message}" if where else self.message


class ImportProblemError(Exception):
    def __init__(self, problem: ImportProblem) -> None:
        super().__init__(str(problem))
        self.problem = problem


@dataclass(frozen=True)
class PatchRecord:
    content: bytes
    stats: PatchStats


@dataclass
class TrajectoryRecord:
    format: str
    # Called when the group is written; yields normalized event dicts. Streaming for sidecar
    # files, so a 200 MB trajectory never sits in memory whole.
    open_events: Callable[[], Iterator[dict[str, Any]]]
    content_hash: str
    # The file it is read from, when one was found by name (SWE-bench trajectory folders).
    file: Path | None = None


@dataclass
class AttemptRecord:
    external_id: str
    status: str
    test_reward: float
    test_report: dict[str, Any]
    test_output: bytes
    patch: PatchRecord | None
    trajectory: TrajectoryRecord | None
    num_turns: int | None
    tokens_in: int | None
    tokens_out: int | None
    agent_system: str = ""
    agent_model: str = ""
    agent_family: str = ""
    agent_metadata: dict[str, Any] = field(default_factory=dict)
    # Test output kept in a file (a run folder's test_output.txt) is read when the group is
    # written, not held in memory for the whole import, and bounded (`test_outputs`).
    test_output_file: TestOutputFile | None = None
    # The SHA-256 of inline output as it was sent, when `test_output` holds it cut (`bounded`):
    # identity is what was sent, as with a file (`TestOutputFile.digest`).
    test_output_sha256: str | None = None
    # How many bytes of the inline output sent `test_output` leaves out (0: it is whole).
    test_output_dropped: int = 0

    @property
    def passed(self) -> bool:
        # The rule of `AttemptQuerySet.passing()`, on a record not yet written ("valid" is
        # `Attempt.Status.VALID`; this layer imports no models).
        return self.status == "valid" and self.test_reward > 0

    def read_test_output(self) -> KeptOutput:
        if self.test_output_file is not None:
            return self.test_output_file.read()
        return KeptOutput(self.test_output, self.test_output_dropped)

    def fuller_test_output(self, stored_dropped: int) -> KeptOutput | None:
        """This record's copy of its test output when it keeps more than a stored copy of the
        same output (the same digest) that dropped `stored_dropped` bytes, else None: a copy
        stored whole is never replaced (so never cut shorter), nor a cut one by a copy that
        keeps no more. A file is read only when its size says this limit may keep more, and
        then only the parts a write would keep."""
        if stored_dropped <= 0:
            return None
        output = self.test_output_file
        if output is not None and not output.may_keep_more(stored_dropped):
            return None
        kept = self.read_test_output()
        return kept if kept.dropped < stored_dropped else None

    def test_output_digest(self) -> str:
        if self.test_output_file is not None:
            return self.test_output_file.digest()
        return self.test_output_sha256 or hashlib.sha256(self.test_output).hexdigest()


@dataclass
class TaskRecord:
    external_id: str
    repo: str
    repo_url: str
    base_commit: str
    problem_statement: str
    fail_to_pass: list[str]
    pass_to_pass: list[str]
    test_command: str
    test_patch: PatchRecord | None
    gold_patch: PatchRecord | None
    metadata: dict[str, Any]

    @property
    def content_hash(self) -> str:
        return canonical_hash(
            {
                "id": self.external_id,
                "repo": self.repo,
                "repo_url": self.repo_url,
                "base_commit": self.base_commit,
                "problem_statement": self.problem_statement,
                "fail_to_pass": self.fail_to_pass,
                "pass_to_pass": self.pass_to_pass,
                "test_command": self.test_command,
                "test_patch": self.test_patch.stats.sha256 if self.test_patch else None,
                "gold_patch": self.gold_patch.stats.sha256 if self.gold_patch else None,
                "metadata": self.metadata,
            }
        )


@dataclass
class GroupRecord:
    source: str
    line: int | None
    run: str
    step: int
    task_id: str
    task: TaskRecord | None
    external_id: str | None
    attempts: list[AttemptRecord]
    metadata: dict[str, Any]

    @property
    def content_hash(self) -> str:
        return canonical_hash(
            {
                "run": self.run,
                "step": self.step,
                "task": self.task.content_hash if self.task else self.task_id,
                "group_id": self.external_id,
                "metadata": self.metadata,
                "attempts": [
                    {
                        "id": a.external_id,
                        "status": a.status,
                        "test_reward": a.test_reward,
                        "test_report": a.test_report,
                        "test_output": a.test_output_digest(),
                        "patch": a.patch.stats.sha256 if a.patch else None,
                        "trajectory": a.trajectory.content_hash if a.trajectory else None,
                        "counts": [a.num_turns, a.tokens_in, a.tokens_out],
                        "agent": [a.agent_system, a.agent_model, a.agent_family, a.agent_metadata],
                    }
                    for a in self.attempts
                ],
            }
        )


def canonical_hash(value: object) -> str:
    data = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(data.encode("utf-8", errors="surrogatepass")).hexdigest()


_ID_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")


def id_problem(value: str) -> str | None:
    """Why a caller's identifier (run, group, task, attempt, instance id) cannot be stored.

    An id is a join key the caller keeps: it is never rewritten, so an id that is not in
    Unicode NFC is refused (NFC and NFD "café" would otherwise be two tasks), and so are
    control characters and line breaks, which no listing or log line can show faithfully.
    """
    bad = _ID_CONTROL.search(value)
    if bad:
        name = "NUL" if bad.group() == "\x00" else "control character"
        return f"{name} U+{ord(bad.group()):04X} at {bad.start()}: not allowed in an id"
    if not unicodedata.is_normalized("NFC", value):
        return "not in Unicode NFC (normalise the id where it is made; it is never rewritten here)"
    return None


def find_nul(value: object, path: str) -> str | None:
    """Where a NUL character hides in a JSON value: PostgreSQL text and jsonb refuse it."""
    return string_path(value, path, lambda text: "\x00" in text)


def patch_names_problem(stats: PatchStats) -> str | None:
    """Why a patch's file names cannot be stored: unlike its content (bytes), they go to
    bounded text columns, which cannot hold a NUL on PostgreSQL."""
    for f in stats.files:
        for name in (f.source_path, f.target_path):
            if "\x00" in name:
                return f"file name {shown(name)} contains a NUL character"
            if len(name) > MAX_PATH_CHARS:
                return f"file name longer than {MAX_PATH_CHARS} characters"
    return None
