"""Side-by-side diff rendering, pure Python (no Django, Celery or ORM).

Pipeline, after Review Board's diffviewer: `grading.diffs` (the project's one parser) splits a
unified diff into files and hunks, `layout` turns a file into old/new line sequences and
side-by-side rows, `highlight` lexes each side once with Pygments and splits it into per-line
HTML (with intra-line change marks), and `html` folds long unchanged runs and writes the table.
`render` holds the entry points; `signatures` fingerprints hunks to compare candidates.
"""

from grading.diffs import ChangeKind, FileDiff, Hunk, Line, decode_diff, parse_patch
from review.diffs.lexing import LEXED_VERSION, LexCache, Lexed
from review.diffs.render import (
    HUNKS_ONLY,
    RENDERER_VERSION,
    RenderedFile,
    RenderedPair,
    RenderOptions,
    cache_key,
    changed_lines_summary,
    file_id_for,
    render_file,
    render_patch,
    render_post_pair,
)
from review.diffs.signatures import HunkSignature, hunk_signatures, shared_changes, shares_of

__all__ = [
    "HUNKS_ONLY",
    "LEXED_VERSION",
    "RENDERER_VERSION",
    "ChangeKind",
    "FileDiff",
    "Hunk",
    "HunkSignature",
    "LexCache",
    "Lexed",
    "Line",
    "RenderOptions",
    "RenderedFile",
    "RenderedPair",
    "cache_key",
    "changed_lines_summary",
    "decode_diff",
    "file_id_for",
    "hunk_signatures",
    "parse_patch",
    "render_file",
    "render_patch",
    "render_post_pair",
    "shared_changes",
    "shares_of",
]
