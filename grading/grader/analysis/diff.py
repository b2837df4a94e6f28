"""The analysis grader's only contact with the unified-diff format.

Everything else in the package reads these dataclasses, so switching to the project's shared diff
parser (issue 12) means rewriting `parse` alone. Parsing never raises: a diff unidiff cannot read
becomes a `Patch` with no files and an `error`, which the features treat as "nothing to see".
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Literal

from unidiff import PatchSet
from unidiff.errors import UnidiffParseError

Kind = Literal["+", "-", " "]
_KINDS: dict[str, Kind] = {"+": "+", "-": "-", " ": " "}


@dataclass(frozen=True)
class Line:
    kind: Kind
    old: int | None  # pre-patch line number (removed and context lines)
    new: int | None  # post-patch line number (added and context lines)
    text: str  # without the line ending


@dataclass(frozen=True)
class Hunk:
    old_start: int
    old_len: int
    new_start: int
    new_len: int
    section: str  # the text git prints after the second @@ (often the enclosing def)
    lines: tuple[Line, ...]


@dataclass(frozen=True)
class FilePatch:
    source_path: str | None  # None for a new file
    target_path: str | None  # None for a deleted file
    is_binary: bool
    hunks: tuple[Hunk, ...]

    @property
    def path(self) -> str:
        """The post-patch path, or the pre-patch path of a deleted file."""
        return self.target_path or self.source_path or ""

    @property
    def is_new(self) -> bool:
        return self.source_path is None

    @property
    def is_deleted(self) -> bool:
        return self.target_path is None

    @cached_property
    def added(self) -> dict[int, str]:
        return {ln.new: ln.text for h in self.hunks for ln in h.lines if ln.kind == "+" and ln.new}

    @cached_property
    def removed(self) -> dict[int, str]:
        return {ln.old: ln.text for h in self.hunks for ln in h.lines if ln.kind == "-" and ln.old}

    @cached_property
    def context_post(self) -> frozenset[int]:
        return frozenset(ln.new for h in self.hunks for ln in h.lines if ln.kind == " " and ln.new)


@dataclass(frozen=True)
class Patch:
    files: tuple[FilePatch, ...] = ()
    error: str | None = None

    def changed_lines(self) -> int:
        return sum(len(f.added) + len(f.removed) for f in self.files)

    @cached_property
    def normalised(self) -> tuple[tuple[str, str, tuple[tuple[str, str], ...]], ...]:
        """What the patch changes, without line numbers, hunk headers or index lines.

        Two patches with the same normalised change are the same edit (SWE-agent's leading
        newline, other `index` hashes or hunk offsets do not make them different candidates).
        """
        return tuple(
            sorted(
                (
                    f.source_path or "",
                    f.target_path or "",
                    tuple((ln.kind, ln.text) for h in f.hunks for ln in h.lines if ln.kind != " "),
                )
                for f in self.files
            )
        )


def _strip(path: str | None) -> str | None:
    path = (path or "").rstrip("\r")
    if not path or path == "/dev/null":
        return None
    return path[2:] if path[:2] in ("a/", "b/") else path


def parse(text: str) -> Patch:
    """Parse a unified diff (git or plain); never raises."""
    if not text.strip():
        return Patch()
    try:
        patch_set = PatchSet(text)
    except (UnidiffParseError, ValueError) as exc:
        return Patch(error=str(exc))
    files = []
    for pf in patch_set:
        hunks = []
        for h in pf:
            lines = []
            for ln in h:
                kind = _KINDS.get(ln.line_type)
                if kind is None:
                    continue  # "\ No newline at end of file"
                text_ = ln.value.rstrip("\n").rstrip("\r")
                lines.append(Line(kind, ln.source_line_no, ln.target_line_no, text_))
            section = (h.section_header or "").strip()
            hunks.append(
                Hunk(h.source_start, h.source_length, h.target_start, h.target_length, section,
                     tuple(lines))
            )  # fmt: skip
        source = None if pf.is_added_file else _strip(pf.source_file)
        target = None if pf.is_removed_file else _strip(pf.target_file)
        files.append(FilePatch(source, target, bool(pf.is_binary_file), tuple(hunks)))
    return Patch(tuple(files))
