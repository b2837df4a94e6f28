"""What a parsed unified diff is: files, hunks, lines, and which lines a file's patch changes.

Every part of the project that asks "which lines did this candidate change" (import statistics,
the grader's tools and evidence checks, the analysis grader, the reviewer's diff view, the
candidate compare) reads these classes, so they all give the same answer.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cached_property
from typing import Literal

ChangeKind = Literal["added", "modified", "deleted", "renamed"]
LineKind = Literal[" ", "-", "+"]
Side = Literal["pre", "post"]

# Paths that hold tests in the ecosystems SWE-style tasks come from (Python, JS/TS, Go, Ruby):
# by directory, or by file name.
_TEST_DIR = r"(^|/)(tests?|testing|spec|__tests__)/"
_TEST_DIR_RE = re.compile(_TEST_DIR)
_TEST_PATH = re.compile(
    _TEST_DIR + r"|(^|/)test_[^/]*\.py$"
    r"|_tests?\.py$"
    r"|(^|/)conftest\.py$"
    r"|\.(test|spec)\.[jt]sx?$"
    r"|_test\.go$"
)


def is_test_path(path: str) -> bool:
    """Whether a repository path holds tests (by directory or by file-name convention)."""
    return bool(_TEST_PATH.search(path))


def in_test_dir(path: str) -> bool:
    """Whether a path lies in a test directory (whatever the file's own name)."""
    return bool(_TEST_DIR_RE.search(path))


@dataclass(frozen=True, slots=True)
class Line:
    kind: LineKind
    # Text without the one-character prefix and without "\n"; keeps the "\r" of a CRLF line,
    # so a renderer can show the file as it is. `content` is the line without it.
    text: str
    old_no: int | None  # pre-patch line number (removed and context lines)
    new_no: int | None  # post-patch line number (added and context lines)
    raw: int  # index of this line in `Patch.lines`
    no_newline: bool = False  # followed by "\ No newline at end of file"

    @property
    def content(self) -> str:
        """What the line says: the text without a CRLF line's carriage return."""
        return self.text[:-1] if self.text.endswith("\r") else self.text


@dataclass(frozen=True, slots=True)
class Hunk:
    old_start: int
    old_len: int
    new_start: int
    new_len: int
    section: str  # what git prints after the second "@@" (often the enclosing def)
    lines: tuple[Line, ...]
    raw: int  # index of the "@@" header in `Patch.lines`

    @property
    def first_old(self) -> int:
        """First old line the hunk covers (for a pure insertion, the line after `old_start`)."""
        return self.old_start if self.old_len else self.old_start + 1

    @property
    def next_old(self) -> int:
        """First old line after the hunk."""
        return self.old_start + self.old_len if self.old_len else self.old_start + 1


@dataclass(frozen=True)
class FileDiff:
    """One file of a patch. A path of None is /dev/null: the file is new (old) or deleted (new)."""

    old_path: str | None
    new_path: str | None
    hunks: tuple[Hunk, ...] = ()
    is_binary: bool = False
    # Set by git's "rename from/to" (and "copy from/to", whose hunks also read from old_path).
    is_rename: bool = False
    # Lines [start, end) of `Patch.lines` that belong to this file, headers included.
    start: int = 0
    end: int = 0

    @property
    def path(self) -> str:
        """The post-patch path, or the pre-patch path of a deleted file."""
        return self.new_path or self.old_path or ""

    @property
    def is_new(self) -> bool:
        return self.old_path is None

    @property
    def is_deleted(self) -> bool:
        return self.new_path is None

    @property
    def is_test(self) -> bool:
        return is_test_path(self.path)

    @property
    def change(self) -> ChangeKind:
        # The headers decide, never the hunk counts: "@@ -0,0 +1 @@" on an existing empty
        # file is a modification (unidiff calls it an added file).
        if self.is_new:
            return "added"
        if self.is_deleted:
            return "deleted"
        if self.is_rename or self.old_path != self.new_path:
            return "renamed"
        return "modified"

    @property
    def lines_added(self) -> int:
        return sum(1 for _ in self.lines_of("+"))

    @property
    def lines_removed(self) -> int:
        return sum(1 for _ in self.lines_of("-"))

    def lines_of(self, kind: LineKind) -> Iterator[Line]:
        return (ln for h in self.hunks for ln in h.lines if ln.kind == kind)

    @cached_property
    def added(self) -> dict[int, str]:
        """Post-patch line number -> content of every added line."""
        return {ln.new_no: ln.content for ln in self.lines_of("+") if ln.new_no is not None}

    @cached_property
    def removed(self) -> dict[int, str]:
        """Pre-patch line number -> content of every removed line."""
        return {ln.old_no: ln.content for ln in self.lines_of("-") if ln.old_no is not None}

    @cached_property
    def context_pre(self) -> frozenset[int]:
        return frozenset(ln.old_no for ln in self.lines_of(" ") if ln.old_no is not None)

    @cached_property
    def context_post(self) -> frozenset[int]:
        return frozenset(ln.new_no for ln in self.lines_of(" ") if ln.new_no is not None)

    def has_lines(self, side: Side, start: int, end: int) -> bool:
        """Whether every line in [start, end] is shown by the diff on that side: added or
        context lines for "post", removed or context lines for "pre"."""
        if side == "post":
            seen, context = self.added, self.context_post
        else:
            seen, context = self.removed, self.context_pre
        return all(n in seen or n in context for n in range(start, end + 1))


@dataclass(frozen=True)
class Patch:
    """A parsed diff: its files in order, the lines it was read from, and what did not parse.

    `problems` is empty for a well-formed diff; each entry names a line the parser had to skip
    or a hunk that ended before its header's counts (a truncated or hand-edited patch). What was
    read before a problem is kept.
    """

    files: tuple[FileDiff, ...] = ()
    lines: tuple[str, ...] = ()
    problems: tuple[str, ...] = ()

    def __iter__(self) -> Iterator[FileDiff]:
        return iter(self.files)

    def __len__(self) -> int:
        return len(self.files)

    def __getitem__(self, index: int) -> FileDiff:
        return self.files[index]

    @cached_property
    def by_path(self) -> dict[str, FileDiff]:
        """Files by `path` (a path the patch names twice keeps its last entry)."""
        return {f.path: f for f in self.files}

    @property
    def paths(self) -> list[str]:
        return list(self.by_path)

    def find(self, path: str) -> FileDiff | None:
        """Look a file up by its post path, falling back to its pre path (renames, deletions)."""
        if path in self.by_path:
            return self.by_path[path]
        return next((f for f in self.files if f.old_path == path), None)

    @property
    def lines_added(self) -> int:
        return sum(f.lines_added for f in self.files)

    @property
    def lines_removed(self) -> int:
        return sum(f.lines_removed for f in self.files)

    @property
    def hunk_count(self) -> int:
        return sum(len(f.hunks) for f in self.files)

    def changed_lines(self) -> int:
        return self.lines_added + self.lines_removed

    def file_text(self, file: FileDiff) -> str:
        """The lines of the diff that belong to one file, as they were written."""
        return "".join(line + "\n" for line in self.lines[file.start : file.end])

    @cached_property
    def normalised(self) -> tuple[tuple[str, str, tuple[tuple[str, str], ...]], ...]:
        """What the patch changes, without line numbers, hunk headers or index lines.

        Two patches with the same normalised change are the same edit (SWE-agent's leading
        newline, other `index` hashes or hunk offsets do not make them different candidates).
        """
        return tuple(
            sorted(
                (
                    f.old_path or "",
                    f.new_path or "",
                    tuple(
                        (ln.kind, ln.content) for h in f.hunks for ln in h.lines if ln.kind != " "
                    ),
                )
                for f in self.files
            )
        )
