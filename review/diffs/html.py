"""HTML for one file's side-by-side table.

Built with f-strings rather than Django templates: this package must not import Django, and a
template render per row costs far more than the highlighting itself. Every interpolated value is
either an int, a hex file id, an attribute escaped with `escape_attr`, or per-line HTML from
`highlight.py` (which escapes all text itself). No inline event handlers: the page script finds
expand buttons by `data-expand` and line numbers on rows (`data-o` old side, `data-n` new side).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from html import escape

from grading.domain.hostile_text import mixed_scripts, scripts_of, visible
from grading.domain.wording import plural
from review.diffs.layout import Chunk, Row

_CELL_CLASS = {
    "equal": ("eq", "eq"),
    "replace": ("del", "ins"),
    "delete": ("del", "empty"),
    "insert": ("empty", "ins"),
}
_NO_NEWLINE = '<span class="d-nonl" title="No newline at end of file">\u2424</span>'


def escape_attr(value: str) -> str:
    return escape(value, quote=True)


@dataclass(frozen=True, slots=True)
class SideHtml:
    """Per-line HTML of both sides plus the positions lacking a final newline."""

    old: Sequence[str]
    new: Sequence[str]
    old_no_newline: frozenset[int]
    new_no_newline: frozenset[int]
    # Added lines (by new-side position) with words that mix alphabets: warned about in place.
    new_mixed: Mapping[int, Sequence[str]] = field(default_factory=dict)


def _mixed_warning(words: Sequence[str]) -> str:
    """The note after an added line whose identifiers mix alphabets (`lаbel`: Latin and
    Cyrillic), which read as one name and are another."""
    named = "; ".join(f"{w} ({' + '.join(s.title() for s in scripts_of(w))})" for w in words)
    text = escape(visible(named), quote=False)
    return (
        f'<span class="d-mixed" title="A word on this line mixes alphabets">'
        f"\u26a0 mixes alphabets: {text}</span>"
    )


def _cell(no: int | None, pos: int | None, cls: str, html: str, nonl: bool, warn: str = "") -> str:
    if no is None or pos is None:
        return '<td class="d-ln"></td><td class="d-code empty"></td>'
    extra = (_NO_NEWLINE if nonl else "") + warn
    return f'<td class="d-ln">{no}</td><td class="d-code {cls}">{html}{extra}</td>'


def _row(row: Row, sides: SideHtml) -> str:
    # Line numbers on the row, not on its four cells: `data-o` is the old side's line and
    # `data-n` the new side's; the old side's cells are the first two, the new side's the last.
    old_cls, new_cls = _CELL_CLASS[row.kind]
    old_html = sides.old[row.old_pos] if row.old_pos is not None else ""
    new_html = sides.new[row.new_pos] if row.new_pos is not None else ""
    mixed = (
        sides.new_mixed.get(row.new_pos) if row.new_pos is not None and new_cls == "ins" else None
    )
    attrs = ""
    if row.old_no is not None and row.old_pos is not None:
        attrs += f' data-o="{row.old_no}"'
    if row.new_no is not None and row.new_pos is not None:
        attrs += f' data-n="{row.new_no}"'
    return (
        f'<tr class="d-{row.kind}"{attrs}>'
        + _cell(row.old_no, row.old_pos, old_cls, old_html, row.old_pos in sides.old_no_newline)
        + _cell(
            row.new_no,
            row.new_pos,
            new_cls,
            new_html,
            row.new_pos in sides.new_no_newline,
            _mixed_warning(mixed) if mixed else "",
        )
        + "</tr>"
    )


# Opening tags; each body runs to the first "</tbody>" after it (our own markup: bodies never
# nest, and escaped text holds no "<"). Found with str.find: a lazy `.*?</tbody>` steps through
# the megabytes of a big diff's rows one character at a time.
_FOLDED_OPEN = re.compile(r'<tbody class="d-collapsed" id="([^"]+)" hidden>')
_BODY_OPEN = re.compile(r"<tbody[ >]")
_BODY_CLOSE = "</tbody>"
_COLS = re.compile(r"<colgroup>.*?</colgroup>", re.S)
# Rows per part of a table on the review page: a screen shows about 45 rows, and the browser
# lays out a part that is near the screen whole (tens of rows, not a file's hundreds).
PART_ROWS = 24


def _bodies(html: str, opening: re.Pattern[str]) -> Iterator[tuple[re.Match[str], int]]:
    """Each body `opening` starts: its opening tag's match and where its "</tbody>" starts."""
    pos = 0
    while (m := opening.search(html, pos)) is not None:
        close = html.find(_BODY_CLOSE, m.end())
        if close < 0:
            return
        yield m, close
        pos = close + len(_BODY_CLOSE)


def lean_html(html: str) -> str:
    """The table as the review page sends it: without its folded rows (empty `d-collapsed`
    bodies stay, for the rows fetched when the reviewer expands them: most of a big diff's
    bytes are unchanged context), and in parts (`parted`)."""
    out, done = [], 0
    for m, close in _bodies(html, _FOLDED_OPEN):
        out.append(html[done : m.end()])
        done = close
    out.append(html[done:])
    return parted("".join(out))


def parted(html: str) -> str:
    """The table cut between its bodies into tables of about PART_ROWS rows, each in a
    `d-part` box (its row count in `data-rows`) that the page's style lays out only near the
    screen (`content-visibility`, which has no effect on a table or its rows, hence the boxes):
    showing a file of hundreds of rows then costs the rows on screen, not all of them. The
    first part keeps the table's id, data attributes and title; the others repeat its columns.
    A folded body stays in the part of the expander before it (expand.js looks in one table),
    and no body is cut: a change block stays whole."""
    bodies = [(m.start(), close + len(_BODY_CLOSE)) for m, close in _bodies(html, _BODY_OPEN)]
    cols = _COLS.search(html)
    if len(bodies) < 2 or cols is None:
        return html
    head, tail = html[: bodies[0][0]], html[bodies[-1][1] :]
    parts: list[list[str]] = [[]]
    rows = [0]
    for start, end in bodies:
        text = html[start:end]
        if rows[-1] >= PART_ROWS and not text.startswith('<tbody class="d-collapsed"'):
            parts.append([])
            rows.append(0)
        parts[-1].append(text)
        rows[-1] += text.count("<tr")
    if len(parts) == 1:
        return html
    more = f'<table class="d-file d-more">{cols.group()}'
    out = []
    for n, (part, count) in enumerate(zip(parts, rows, strict=True)):
        opening = head if n == 0 else more
        closing = tail if n == len(parts) - 1 else "</table>"
        out.append(
            f'<div class="d-part" data-rows="{count}">{opening}{"".join(part)}{closing}</div>'
        )
    return "".join(out)


def folded_rows(html: str, block: str) -> str | None:
    """The rows of one folded block (`data-expand` id) of a table, or None."""
    for m, close in _bodies(html, _FOLDED_OPEN):
        if m.group(1) == block:
            return html[m.end() : close]
    return None


def render_table(
    *,
    file_id: str,
    path: str,
    title: str,
    chunks: Sequence[Chunk],
    sides: SideHtml,
    page: int,
    message: str = "",
    paths: Sequence[str] = (),
) -> str:
    """The `<table>` for one file page. `title` and `message` are plain text; `paths` are the
    file's names (old and new), warned about when one mixes alphabets."""
    title = visible(title)
    if any(mixed_scripts(p) for p in (*paths, path)):
        warning = "Warning: this file name mixes alphabets (e.g. a Cyrillic letter among Latin)."
        message = f"{message} {warning}" if message else warning
    out = [
        f'<table class="d-file" id="{file_id}" data-file="{escape_attr(path)}" '
        f'data-file-id="{file_id}" data-page="{page}">',
        '<colgroup><col class="d-ln"><col class="d-code"><col class="d-ln"><col class="d-code">'
        "</colgroup>",
        f'<thead><tr><th colspan="4" class="d-title">{escape(title, quote=False)}</th></tr>'
        "</thead>",
    ]
    if message:
        out.append(
            f'<tbody class="d-message"><tr><td colspan="4">{escape(message, quote=False)}'
            "</td></tr></tbody>"
        )
    for n, chunk in enumerate(chunks):
        if chunk.kind == "gap" and chunk.gap is not None:
            section = escape(visible(chunk.gap.section), quote=False)
            label = f"\u22ef {plural(chunk.gap.count, 'line')} not in the diff"
            out.append(
                f'<tbody class="d-gap"><tr><td colspan="4"><span class="d-gap-count">{label}'
                f'</span> <span class="d-section">{section}</span></td></tr></tbody>'
            )
            continue
        body = "".join(_row(row, sides) for row in chunk.rows)
        if chunk.kind == "collapsed":
            block = f"{file_id}-p{page}-c{n}"
            label = f"Show {plural(len(chunk.rows), 'unchanged line')}"
            out.append(
                f'<tbody class="d-expander"><tr><td colspan="4"><button type="button" '
                f'class="d-expand" data-expand="{block}" aria-controls="{block}" '
                f'aria-expanded="false">{label}</button></td></tr></tbody>'
                f'<tbody class="d-collapsed" id="{block}" hidden>{body}</tbody>'
            )
        else:
            out.append(f'<tbody class="d-{chunk.kind}">{body}</tbody>')
    out.append("</table>")
    return "".join(out)
