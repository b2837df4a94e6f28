"""Per-file statistics of a stored patch, read with the project's diff parser (`grading.diffs`).

The stored bytes are the source of truth; this module only reads them. Import refuses what the
parser could not read cleanly (no file header, a hunk cut short): such a patch would apply
differently from what its statistics say.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

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
    sha256: str
    size: int
    files: tuple[FileStats, ...] = field(default_factory=tuple)

    @property
    def lines_added(self) -> int:
        return sum(f.lines_added for f in self.files)

    @property
    def lines_removed(self) -> int:
        return sum(f.lines_removed for f in self.files)

    @property
    def hunks(self) -> int:
        return sum(f.hunks for f in self.files)

    @property
    def has_binary(self) -> bool:
        return any(f.is_binary for f in self.files)

    @property
    def touches_tests(self) -> bool:
        return any(f.is_test for f in self.files)


def sha256_of(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def patch_stats(data: bytes) -> PatchStats:
    """Count files, hunks and lines of a diff. An empty diff is valid and has no files.

    Raises PatchParseError for text with no file header, or with lines the parser had to skip
    or hunks shorter than their headers (what unidiff, the reference it is tested against,
    refuses too).
    """
    files: list[FileStats] = []
    if data.strip():
        patch = parse_patch(data)
        if patch.problems:
            raise PatchParseError("; ".join(patch.problems[:3]))
        if not patch.files:
            raise PatchParseError("no file headers (---/+++ or diff --git) found")
        files = [
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
        ]
    return PatchStats(sha256=sha256_of(data), size=len(data), files=tuple(files))
