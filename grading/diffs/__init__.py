"""Unified diffs, pure Python: the one parser and the one candidate compare.

`parse` reads a diff into `model`'s files, hunks and numbered lines (tolerant: it never raises,
it names what it skipped); `compare` says, per file, what one candidate's patch does that
another's does not. Import statistics, the grader's tools and evidence checks, the analysis
grader and the reviewer's diff view all read diffs through here, so they agree on which lines
changed.
"""

from grading.diffs.compare import (
    Block,
    ChangedLine,
    FileComparison,
    PostLine,
    PostPair,
    PostSegment,
    compare_file,
    compare_patches,
    post_versions,
)
from grading.diffs.model import (
    ChangeKind,
    FileDiff,
    Hunk,
    Line,
    LineKind,
    Patch,
    in_test_dir,
    is_test_path,
)
from grading.diffs.parse import decode_diff, parse_patch

__all__ = [
    "Block",
    "ChangeKind",
    "ChangedLine",
    "FileComparison",
    "FileDiff",
    "Hunk",
    "Line",
    "LineKind",
    "Patch",
    "PostLine",
    "PostPair",
    "PostSegment",
    "compare_file",
    "compare_patches",
    "decode_diff",
    "in_test_dir",
    "is_test_path",
    "parse_patch",
    "post_versions",
]
