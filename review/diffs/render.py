"""Entry points: one page of one file, a whole patch, two patches side by side."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from dataclasses import asdict, dataclass, replace
from typing import Literal

from grading.diffs import (
    ChangeKind,
    FileComparison,
    FileDiff,
    PostPair,
    decode_diff,
    parse_patch,
)
from grading.domain.hostile_text import mixed_script_words
from grading.domain.wording import plural
from review.diffs.highlight import (
    Ranges,
    display_text,
    intraline_ranges,
    lexed_side,
    lexer_for,
    line_html,
    lines_html,
    plain_lines,
)
from review.diffs.html import SideHtml, lean_html, render_table
from review.diffs.layout import (
    Item,
    Row,
    Sides,
    chunk_items,
    paginate,
    rows_from_full,
    rows_from_hunks,
    rows_from_post_pair,
)
from review.diffs.lexing import LexCache, lex_against

# Bump whenever the HTML for the same input and options changes, so cached fragments expire.
RENDERER_VERSION = "4"

# The page labels a binary file as such, whatever happened to it.
ShownKind = ChangeKind | Literal["binary"]

_SHA256_HEX = re.compile(r"[0-9a-f]{64}")


@dataclass(frozen=True, slots=True)
class RenderOptions:
    context: int = 3
    # Highlighting is skipped above these sizes: Pygments time grows with the file, and very
    # long lines (minified code, data) can make some lexers crawl.
    highlight_max_lines: int = 3_000
    highlight_max_line_length: int = 2_000
    # Files with more rows than this are split into pages.
    page_size: int = 2_000
    intraline: bool = True


@dataclass(frozen=True, slots=True)
class RenderedFile:
    path: str
    old_path: str | None
    new_path: str | None
    change: ShownKind
    added: int
    removed: int
    html: str
    pages: int
    highlighted: bool
    page: int = 1
    file_id: str = ""

    @property
    def lean_html(self) -> str:
        """`html` without the rows of folded context (fetched when expanded)."""
        return lean_html(self.html)


def file_id_for(path: str) -> str:
    """An anchor id for a path: a hash, so odd characters in names never reach an id."""
    digest = hashlib.sha256(path.encode("utf-8", errors="surrogatepass")).hexdigest()
    return f"f-{digest[:16]}"


def cache_key(diff_sha256: str, options: RenderOptions, *, page: int = 1, extra: str = "") -> str:
    """Key for a cached rendering: content hash + options hash + renderer version.

    `extra` is for anything else the output depends on, e.g. a digest of the old files.
    """
    if not _SHA256_HEX.fullmatch(diff_sha256):
        raise ValueError("diff_sha256 must be 64 lowercase hex characters")
    payload = json.dumps({"o": asdict(options), "p": page, "x": extra}, sort_keys=True)
    options_hash = hashlib.sha256(payload.encode()).hexdigest()[:20]
    return f"gagar-diff:v{RENDERER_VERSION}:{diff_sha256}:{options_hash}"


def _title(file: FileDiff) -> str:
    if file.old_path and file.new_path and file.old_path != file.new_path:
        return f"{file.old_path} \u2192 {file.new_path}"
    return file.path


def _message(file: FileDiff) -> str:
    if file.is_binary:
        return "Binary file not shown."
    if file.hunks:
        return ""
    if file.change == "renamed":
        return "File renamed without changes."
    if file.change == "added":
        return "Empty file added."
    if file.change == "deleted":
        return "Empty file deleted."
    return "No content changes (mode change only)."


def _marks(
    items: list[Item], old: list[str], new: list[str]
) -> tuple[dict[int, list[tuple[int, int]]], dict[int, list[tuple[int, int]]]]:
    old_marks: dict[int, list[tuple[int, int]]] = {}
    new_marks: dict[int, list[tuple[int, int]]] = {}
    for item in items:
        if isinstance(item, Row) and item.kind == "replace":
            assert item.old_pos is not None and item.new_pos is not None
            o, n = intraline_ranges(old[item.old_pos], new[item.new_pos])
            if o:
                old_marks[item.old_pos] = o
            if n:
                new_marks[item.new_pos] = n
    return old_marks, new_marks


def _mixed_lines(items: list[Item], new: list[str]) -> dict[int, list[str]]:
    """Added lines of this page whose words mix alphabets, by new-side position."""
    out: dict[int, list[str]] = {}
    for item in items:
        if (
            isinstance(item, Row)
            and item.kind in ("insert", "replace")
            and item.new_pos is not None
        ):
            words = mixed_script_words(new[item.new_pos])
            if words:
                out[item.new_pos] = words
    return out


def _wants_highlight(old: list[str], new: list[str], options: RenderOptions) -> bool:
    if max(len(old), len(new)) > options.highlight_max_lines:
        return False
    longest = max((len(t) for t in (*old, *new)), default=0)
    return longest <= options.highlight_max_line_length


def _side_html(
    old: list[str],
    new: list[str],
    paths: tuple[str, str],
    items: list[Item],
    marks: tuple[Mapping[int, Ranges], Mapping[int, Ranges]],
    lex_cache: LexCache | None = None,
) -> tuple[list[str], list[str]] | None:
    """Both sides highlighted, or None (the caller shows plain text). The old side is lexed
    whole (through `lex_cache`, when given: a base file shared by candidates is lexed once);
    the new side only where it differs from the old, the lines the rows call equal copied."""
    old_lexed = lexed_side(old, paths[0], cache=lex_cache)
    if old_lexed is None:
        return None
    new_lexed = None
    lexer = lexer_for(paths[1])
    same = {
        i.new_pos: i.old_pos
        for i in items
        if isinstance(i, Row) and i.kind == "equal" and i.new_pos is not None
        if i.old_pos is not None
    }
    if lexer is lexer_for(paths[0]):
        try:
            new_lexed = lex_against(lexer, new, old_lexed, old, same)
        except Exception:
            new_lexed = None  # lexed whole below; a lexer bug shows as plain text there
    if new_lexed is None:
        new_lexed = lexed_side(new, paths[1])
    if new_lexed is None:
        return None
    old_html = lines_html(old_lexed, marks[0])
    # A line copied from the old side without marks on either side is the old line's HTML.
    new_html = [
        old_html[r]
        if (r := same.get(i)) is not None
        and pieces is old_lexed.lines[r]
        and i not in marks[1]
        and r not in marks[0]
        else line_html(pieces, marks[1].get(i))
        for i, pieces in enumerate(new_lexed.lines)
    ]
    return old_html, new_html


def render_file(
    file: FileDiff,
    *,
    old_text: str | bytes | None = None,
    options: RenderOptions | None = None,
    page: int = 1,
    lex_cache: LexCache | None = None,
) -> RenderedFile:
    """Render one page of one file. `old_text` (the pre-image) enables expandable context;
    `lex_cache` keeps its lexed tokens for the other candidates that change the same file.

    Raises ValueError for a page outside 1..pages.
    """
    opts = options or RenderOptions()
    sides: Sides
    items: list[Item]
    built = None
    if old_text is not None and file.hunks and file.change != "added":
        built = rows_from_full(file, decode_diff(old_text))
    sides, items = built if built is not None else rows_from_hunks(file)
    if file.is_binary:
        sides, items = Sides(), []
    pages = paginate(items, opts.page_size)
    if not 1 <= page <= len(pages):
        raise ValueError(f"page {page} out of range 1..{len(pages)}")
    page_items = pages[page - 1]

    old = [display_text(t) for t in sides.old]
    new = [display_text(t) for t in sides.new]
    old_marks, new_marks = _marks(page_items, old, new) if opts.intraline else ({}, {})
    both = None
    if _wants_highlight(old, new, opts):
        paths = (file.old_path or file.path, file.path)
        both = _side_html(
            old, new, paths, items, (old_marks, new_marks), lex_cache if sides.full else None
        )
    highlighted = both is not None
    old_html, new_html = both or (plain_lines(old, old_marks), plain_lines(new, new_marks))

    fid = file_id_for(file.path)
    html = render_table(
        paths=[p for p in (file.old_path, file.new_path) if p],
        file_id=fid,
        path=file.path,
        title=_title(file),
        chunks=chunk_items(page_items, opts.context),
        sides=SideHtml(
            old_html,
            new_html,
            frozenset(sides.old_no_newline),
            frozenset(sides.new_no_newline),
            _mixed_lines(page_items, sides.new),
        ),
        page=page,
        message=_message(file),
    )
    return RenderedFile(
        path=file.path,
        old_path=file.old_path,
        new_path=file.new_path,
        change="binary" if file.is_binary else file.change,
        added=file.lines_added,
        removed=file.lines_removed,
        html=html,
        pages=len(pages),
        highlighted=highlighted,
        page=page,
        file_id=fid,
    )


def render_patch(
    diff: str | bytes,
    *,
    old_files: Mapping[str, str | bytes] | None = None,
    context: int | None = None,
    options: RenderOptions | None = None,
) -> list[RenderedFile]:
    """Render the first page of every file. `old_files` maps old paths to pre-image text."""
    opts = options or RenderOptions()
    if context is not None:
        opts = replace(opts, context=context)
    old_files = old_files or {}
    return [
        render_file(f, old_text=old_files.get(f.old_path or ""), options=opts)
        for f in parse_patch(diff)
    ]


def changed_lines_summary(d: FileComparison) -> str:
    """What two candidates' changes to one file have in common, in words."""
    return (
        f"{plural(d.count('shared'), 'changed line')} shared, {d.count('only_a')} only on the "
        f"left, {d.count('only_b')} only on the right."
    )


HUNKS_ONLY = (
    "Only the diffs' hunks are available for this file (no repository source): each side "
    "shows what its hunks and the other's show, and the lines between them are not known."
)


@dataclass(frozen=True, slots=True)
class RenderedPair:
    """Two candidates' post-patch versions of one file, as one side-by-side table."""

    path: str
    html: str
    complete: bool  # False: rebuilt from the hunks alone
    identical: bool
    highlighted: bool
    differing: int  # rows where the two versions differ


def render_post_pair(pair: PostPair, *, options: RenderOptions | None = None) -> RenderedPair:
    """The diff between two candidates' post-patch versions (A old side, B new side):
    highlighted per side, intra-line marks on paired lines, long equal runs folded."""
    opts = options or RenderOptions()
    sides, items = rows_from_post_pair(pair)
    old = [display_text(t) for t in sides.old]
    new = [display_text(t) for t in sides.new]
    old_marks, new_marks = _marks(items, old, new) if opts.intraline else ({}, {})
    both = None
    if _wants_highlight(old, new, opts):
        both = _side_html(old, new, (pair.path, pair.path), items, (old_marks, new_marks))
    highlighted = both is not None
    old_html, new_html = both or (plain_lines(old, old_marks), plain_lines(new, new_marks))
    identical = pair.identical
    message = "" if pair.complete else HUNKS_ONLY
    if identical:
        message = (message + " " if message else "") + "The two versions are the same."
    html = render_table(
        file_id=file_id_for("post-pair:" + pair.path),
        path=pair.path,
        title=pair.path,
        chunks=chunk_items(items, opts.context),
        sides=SideHtml(old_html, new_html, frozenset(), frozenset()),
        page=1,
        message=message,
    )
    return RenderedPair(
        path=pair.path,
        html=html,
        complete=pair.complete,
        identical=identical,
        highlighted=highlighted,
        differing=sum(1 for i in items if isinstance(i, Row) and i.kind != "equal"),
    )
