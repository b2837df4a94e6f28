"""Per-file statistics of a stored patch, read with the project's diff parser (`grading.diffs`).

The stored bytes are the source of truth; this module only reads them. Import refuses what the
parser could not read cleanly (no file header, a hunk cut short): such a patch would apply
differently from what its statistics say.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

from grading.diffs import ChangeKind, parse_patch


class PatchParseError(ValueError):
    """The bytes are not a unified diff the parser can read cleanly."""


@dataclass(frozen=True)
class FileStats:
    source_path: str
    target_path: str
    change: ChangeKind
    is_binary: bool
    is_test: bool
    hunks: int
    lines_added: int
    lines_removed: int

    @property
    def path(self) -> str:
        return self.target_path or self.source_path


@dataclass(frozen=True)
class PatchStats:
    """The columns of a stored patch: a compact summary, so an import holding thousands of
    records keeps counts, not parsed lines."""

    sha256: str
    size: int
    files: tuple[FileStats, ...]
    lines_added: int
    lines_removed: int
    hunks: int
    has_binary: bool
    touches_tests: bool


# A UTF-16 surrogate written as if it were a character (CESU-8 / WTF-8: ED A0..BF xx): not
# UTF-8, and decoded with surrogatepass it becomes a string no UTF-8 file or column can hold.
_SURROGATE_BYTES = re.compile(rb"\xed[\xa0-\xbf][\x80-\xbf]")


def surrogate_problem(data: bytes) -> str | None:
    """Where a patch holds a lone surrogate's bytes, or None."""
    found = _SURROGATE_BYTES.search(data)
    if found is None:
        return None
    code = 0xD000 | ((found[0][1] & 0x3F) << 6) | (found[0][2] & 0x3F)
    line = data.count(b"\n", 0, found.start()) + 1
    return (
        f"a lone surrogate (U+{code:04X}, bytes {found[0].hex(' ').upper()}) at line {line} "
        "of the patch: not UTF-8 text and not a file's bytes git would write"
    )


def sha256_of(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def patch_stats(data: bytes) -> PatchStats:
    """Count files, hunks and lines of a diff. An empty diff is valid and has no files.

    Raises PatchParseError for text with no file header, or with lines the parser had to skip
    or hunks shorter than their headers (what unidiff, the reference it is tested against,
    refuses too).
    """
    patch = parse_patch(data)
    if data.strip():
        if patch.problems:
            raise PatchParseError("; ".join(patch.problems[:3]))
        if not patch.files:
            raise PatchParseError("no file headers (---/+++ or diff --git) found")
    files = tuple(
        FileStats(
            source_path=f.old_path or "",
            target_path=f.new_path or "",
            change=f.change,
            is_binary=f.is_binary,
            is_test=f.is_test,
            hunks=len(f.hunks),
            lines_added=f.lines_added,
            lines_removed=f.lines_removed,
        )
        for f in patch.files
    )
    return PatchStats(
        sha256=sha256_of(data),
        size=len(data),
        files=files,
        lines_added=patch.lines_added,
        lines_removed=patch.lines_removed,
        hunks=patch.hunk_count,
        has_binary=any(f.is_binary for f in files),
        touches_tests=any(f.is_test for f in files),
    )
