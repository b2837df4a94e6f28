"""Per-line HTML for one side of a file: Pygments tokens, our own escaping, intra-line marks.

Like Review Board, each side is lexed once as a whole (so multi-line strings and comments are
coloured correctly) and then split into lines. Unlike using `HtmlFormatter` and splitting its
output, we walk the token stream ourselves: every character of text goes through `escape_text`
here, and intra-line change marks become extra classes on the spans we emit, so they can never
cut through markup.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Mapping, Sequence
from difflib import SequenceMatcher
from functools import lru_cache

from pygments.lexer import Lexer
from pygments.lexers import get_lexer_for_filename
from pygments.lexers._mapping import LEXERS
from pygments.lexers.special import TextLexer
from pygments.styles import get_style_by_name
from pygments.util import ClassNotFound

from grading.domain.hostile_text import visible
from review.diffs.lexing import LexCache, Lexed, Pieces, clear_fused, css_class, lex_side

Ranges = Sequence[tuple[int, int]]

# Class added to spans inside an intra-line change; the hyphen keeps it clear of Pygments' names.
INTRA_CLASS = "d-chg"

# The token classes the page's style colours: Pygments' "friendly" rules, as in
# static/review/review.css (tests/diffs/test_render.py keeps the two equal), less the lexer
# error box, which the page never drew (whitespace has no class: lexing.css_class). A token of
# any other class (names and punctuation: half of all tokens) is plain text merged with its
# neighbours: a span the style does not colour is an element the browser parses, styles and
# lays out for nothing.
STYLED_CLASSES = frozenset(
    css_class(ttype)
    for ttype, rule in get_style_by_name("friendly")
    if any(rule[k] for k in ("color", "bold", "italic", "underline", "bgcolor", "border"))
) - {"", "err"}

_WORD = re.compile(r"\w+|\s+|[^\w\s]")
_MAX_INTRALINE_CHARS = 2_000
_MIN_SIMILARITY = 0.4


def display_text(raw: str) -> str:
    """The text of one diff line as shown: no trailing CR; control, bidi and zero-width
    characters shown as marks (`␛`, `⟨U+202E⟩`), so "Trojan Source" code cannot hide and a
    zero-width space inside an identifier is seen."""
    if raw.endswith("\r"):
        raw = raw[:-1]
    return visible(raw)


def escape_text(text: str) -> str:
    # Text nodes only need &, < and >; attribute values are escaped separately with quotes.
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _special_names() -> re.Pattern[str]:
    """Pygments' file patterns that are not a plain `*.ext` (Makefile, *.html.j2, ...)."""
    plain = re.compile(r"\*\.[A-Za-z0-9_+-]+")
    special = [
        fnmatch.translate(pattern)
        for _module, _name, _aliases, patterns, _mimes in LEXERS.values()
        for pattern in patterns
        if not plain.fullmatch(pattern)
    ]
    return re.compile("|".join(special) or "(?!)")


_SPECIAL_NAMES = _special_names()


@lru_cache(maxsize=512)
def _lexer_for_name(name: str) -> Lexer:
    try:
        return get_lexer_for_filename(name)
    except ClassNotFound:
        return TextLexer()


def lexer_for(path: str) -> Lexer:
    """Lexer by file name. Pygments' lookup scans every lexer (~6 ms), so plain `*.ext` names
    share one cached lookup per extension instead of one per file."""
    name = path.rsplit("/", 1)[-1]
    dot = name.rfind(".")
    if dot <= 0 or _SPECIAL_NAMES.match(name):
        return _lexer_for_name(name)
    return _lexer_for_name("x" + name[dot:])


def intraline_ranges(old: str, new: str) -> tuple[list[tuple[int, int]], list[tuple[int, int]]]:
    """Character ranges that differ between a paired old/new line, found word by word.

    Lines that share too little (similarity below 0.4) get no marks: the whole row is already
    marked as changed and per-word noise would not help the reader.
    """
    if old == new or len(old) + len(new) > _MAX_INTRALINE_CHARS:
        return [], []
    a, b = _WORD.findall(old), _WORD.findall(new)
    matcher = SequenceMatcher(None, a, b, autojunk=False)
    if matcher.ratio() < _MIN_SIMILARITY:
        return [], []
    a_off, b_off = _offsets(a), _offsets(b)
    old_ranges: list[tuple[int, int]] = []
    new_ranges: list[tuple[int, int]] = []
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        if i2 > i1:
            _add_range(old_ranges, a_off[i1], a_off[i2])
        if j2 > j1:
            _add_range(new_ranges, b_off[j1], b_off[j2])
    return old_ranges, new_ranges


def _offsets(tokens: list[str]) -> list[int]:
    out, pos = [0], 0
    for tok in tokens:
        pos += len(tok)
        out.append(pos)
    return out


def _add_range(ranges: list[tuple[int, int]], start: int, end: int) -> None:
    if ranges and ranges[-1][1] == start:
        ranges[-1] = (ranges[-1][0], end)
    else:
        ranges.append((start, end))


def _span(cls: str, text: str) -> str:
    return f'<span class="{cls}">{escape_text(text)}</span>' if cls else escape_text(text)


def _emit_marked(parts: list[str], cls: str, text: str, col: int, ranges: Ranges) -> None:
    """Emit `text` (starting at column `col`) split where intra-line ranges begin and end."""
    end = col + len(text)
    pos = col
    for start, stop in ranges:
        if stop <= pos or start >= end:
            continue
        if start > pos:
            parts.append(_span(cls, text[pos - col : start - col]))
            pos = start
        cut = min(stop, end)
        marked = f"{cls} {INTRA_CLASS}" if cls else INTRA_CLASS
        parts.append(_span(marked, text[pos - col : cut - col]))
        pos = cut
    if pos < end:
        parts.append(_span(cls, text[pos - col :]))


def plain_lines(lines: Sequence[str], marks: Mapping[int, Ranges]) -> list[str]:
    out: list[str] = []
    for idx, text in enumerate(lines):
        ranges = marks.get(idx)
        if ranges:
            parts: list[str] = []
            _emit_marked(parts, "", text, 0, ranges)
            out.append("".join(parts))
        else:
            out.append(escape_text(text))
    return out


def line_html(pieces: Pieces, ranges: Ranges | None = None) -> str:
    """One line's HTML from its token pieces (class, text, class, text, …); intra-line
    `ranges` split the spans they cut."""
    parts: list[str] = []
    it = iter(pieces)
    pairs = zip(it, it)  # noqa: B905 (pairs of one flat tuple: always whole)
    if ranges:
        col = 0
        for cls, piece in pairs:
            _emit_marked(parts, cls if cls in STYLED_CLASSES else "", piece, col, ranges)
            col += len(piece)
        return "".join(parts)
    # Adjacent pieces of one class are merged into one span (as HtmlFormatter does), and
    # adjacent unstyled pieces into one text.
    pend_cls, pend = "", ""
    for cls, piece in pairs:
        if cls not in STYLED_CLASSES:
            cls = ""
        if cls == pend_cls:
            pend += piece
            continue
        if pend:
            parts.append(_span(pend_cls, pend))
        pend_cls, pend = cls, piece
    if pend:
        parts.append(_span(pend_cls, pend))
    return "".join(parts)


def lines_html(lexed: Lexed, marks: Mapping[int, Ranges]) -> list[str]:
    return [line_html(pieces, marks.get(i)) for i, pieces in enumerate(lexed.lines)]


def highlighted_lines(
    lines: Sequence[str], path: str, marks: Mapping[int, Ranges]
) -> list[str] | None:
    """Lex the side once and split it into per-line HTML; None if the lexer misbehaved."""
    lexed = lexed_side(lines, path)
    return None if lexed is None else lines_html(lexed, marks)


def lexed_side(lines: Sequence[str], path: str, *, cache: LexCache | None = None) -> Lexed | None:
    """A side's tokens per line; None if the lexer misbehaved (the caller shows plain text)."""
    try:
        return lex_side(lexer_for(path), lines, cache=cache)
    except Exception:
        # A lexer bug must not break the page.
        return None


def clear_caches() -> None:
    """Forget the lexer and class lookups and the fused rules (benchmarks measure a cold
    start)."""
    _lexer_for_name.cache_clear()
    css_class.cache_clear()
    clear_fused()
    # The lexers' patterns are compiled through `re`'s own cache: a cold start compiles them.
    re.purge()
