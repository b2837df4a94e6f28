"""Parse a unified diff into per-file statistics with unidiff.

The stored bytes are the source of truth; this module only reads them. Bytes that are not UTF-8
are decoded with `surrogateescape` so parsing never changes what is counted.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from typing import Literal

from unidiff import PatchSet
from unidiff.errors import UnidiffParseError

ChangeKind = Literal["added", "modified", "deleted", "renamed"]

# Paths that hold tests in the ecosystems SWE-style tasks come from.
_TEST_PATH = re.compile(
    r"(^|/)(tests?|testing|spec|__tests__)/"
    r"|(^|/)test_[^/]*\.py$"
    r"|_tests?\.py$"
    r"|(^|/)conftest\.py$"
    r"|\.(test|spec)\.[jt]sx?$"
    r"|_test\.go$"
)


class PatchParseError(ValueError):
    """The bytes are not a unified diff unidiff can read."""


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


def is_test_path(path: str) -> bool:
    return bool(_TEST_PATH.search(path))


def _strip_prefix(path: str | None) -> str:
    # CRLF diffs leave a trailing "\r" on header paths.
    path = (path or "").rstrip("\r")
    if not path or path == "/dev/null":
        return ""
    return path[2:] if path[:2] in ("a/", "b/") else path


def sha256_of(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def parse_patch(data: bytes) -> PatchStats:
    """Count files, hunks and lines of a diff. An empty diff is valid and has no files."""
    text = data.decode("utf-8", errors="surrogateescape")
    stats: list[FileStats] = []
    if text.strip():
        try:
            patch_set = PatchSet(text)
        except UnidiffParseError as exc:
            raise PatchParseError(str(exc)) from exc
        if not patch_set:
            raise PatchParseError("no file headers (---/+++ or diff --git) found")
        for pf in patch_set:
            source = _strip_prefix(pf.source_file)
            target = _strip_prefix(pf.target_file)
            change: ChangeKind
            if pf.is_added_file:
                change, source = "added", ""
            elif pf.is_removed_file:
                change, target = "deleted", ""
            elif pf.is_rename:
                change = "renamed"
            else:
                change = "modified"
            path = target or source
            stats.append(
                FileStats(
                    source_path=source,
                    target_path=target,
                    change=change,
                    is_binary=bool(pf.is_binary_file),
                    is_test=is_test_path(path),
                    hunks=len(pf),
                    lines_added=pf.added,
                    lines_removed=pf.removed,
                )
            )
    return PatchStats(sha256=sha256_of(data), size=len(data), files=tuple(stats))
