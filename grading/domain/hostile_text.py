"""Untrusted text made safe to show and to export, pure.

- `strip_ansi`: test output keeps its words, never its terminal colour and cursor sequences.
- `visible`: control characters (C0 except tab and newline, DEL, C1), bidi controls and
  zero-width characters are shown as visible marks (`␛`, `⟨U+202E⟩`), never acted on: a raw
  ESC would reach the reviewer's terminal when they copy text, and an RLO in a file name or a
  trajectory reorders the text around it ("Trojan Source").
- `visible_html`: the same for every text node of an HTML page, markup and attribute values
  untouched: the safety net under pages whose text comes through many paths (the admin).
- `mixed_scripts`, `mixed_script_words`: whether a file name or a line of code has a word that
  mixes alphabets (`lаbel.py` with a Cyrillic а), to warn next to it. The one home of the rule.
- `csv_cell`: a text cell a spreadsheet would run as a formula gets a leading `'` (OWASP's
  CSV-injection guidance); JSON Lines and Parquet keep values as they are.
"""

from __future__ import annotations

import re
import unicodedata
from bisect import bisect_right

# CSI (colours, cursor moves), OSC (titles, hyperlinks; ended by BEL or ST) and the other
# two-character escapes.
_ANSI = re.compile(
    r"\x1b\[[0-?]*[ -/]*[@-~]|\x9b[0-?]*[ -/]*[@-~]"
    r"|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?|\x1b[@-Z\\-_]"
)
BIDI = "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
ZERO_WIDTH = "\u200b\u200c\u200d\u2060\ufeff\u00ad"
_SHOWN: dict[int, str] = {i: chr(0x2400 + i) for i in range(32) if i not in (9, 10)}
_SHOWN[0x7F] = "\u2421"
_SHOWN.update({i: f"⟨U+{i:04X}⟩" for i in range(0x80, 0xA0)})
_SHOWN.update({ord(c): f"⟨U+{ord(c):04X}⟩" for c in BIDI + ZERO_WIDTH})
_NEEDS = re.compile("[\\x00-\\x08\\x0b-\\x1f\\x7f-\\x9f" + BIDI + ZERO_WIDTH + "]")
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
# In an HTML page a CR is a line break like LF (the parser turns it into one), so it stays.
_SHOWN_HTML = {k: v for k, v in _SHOWN.items() if k != 0x0D}
_NEEDS_HTML = re.compile("[\\x00-\\x08\\x0b\\x0c\\x0e-\\x1f\\x7f-\\x9f" + BIDI + ZERO_WIDTH + "]")
# The same characters in UTF-8, to pass a page of megabytes without decoding it: the one-byte
# ones by deleting them, the others by searches that each start with a literal byte prefix
# (several times faster than one alternation).
_C0_BYTES = bytes([*range(0x00, 0x09), 0x0B, 0x0C, *range(0x0E, 0x20), 0x7F])
_UTF8_SEARCHES = [
    re.compile(b"\\xc2[\\x80-\\x9f\\xad]").search,
    re.compile(b"\\xe2\\x80[\\x8b-\\x8f\\xaa-\\xae]").search,
    re.compile(b"\\xe2\\x81[\\xa0\\xa6-\\xa9]").search,
    re.compile(b"\\xd8\\x9c").search,
    re.compile(b"\\xef\\xbb\\xbf").search,
]
# Elements whose content is not shown as text (scripts, styles, comments) or is sent back on
# submit (a textarea: its value must round-trip).
_RAW_OPEN = re.compile(r"<(script|style|textarea)\b|<!--", re.IGNORECASE)


def strip_ansi(text: str) -> str:
    return _ANSI.sub("", text) if "\x1b" in text or "\x9b" in text else text


def visible(text: str) -> str:
    """The text with every control, bidi and zero-width character shown as a mark."""
    return text.translate(_SHOWN) if _NEEDS.search(text) else text


def html_needs_visible(page: bytes) -> bool:
    """Whether a UTF-8 page holds a character `visible_html` marks where it is text (a fast
    scan of the bytes: most pages hold none and are passed as they are)."""
    if len(page.translate(None, _C0_BYTES)) != len(page):
        return True
    return any(search(page) is not None for search in _UTF8_SEARCHES)


def _raw_text_spans(page: str, until: int) -> list[tuple[int, int]]:
    spans: list[tuple[int, int]] = []
    pos = 0
    while pos <= until and (m := _RAW_OPEN.search(page, pos)) is not None:
        if m.group(1):
            close = re.compile(rf"</{m.group(1)}\s*>", re.IGNORECASE).search(page, m.end())
            end = close.end() if close else len(page)
        else:
            found = page.find("-->", m.end())
            end = found + 3 if found >= 0 else len(page)
        spans.append((m.start(), end))
        pos = end
    return spans


def visible_html(page: str) -> str:
    """Every text node of an HTML page made `visible`; tags, attribute values, comments,
    scripts, styles and textarea contents untouched (a `data-path` must keep the real name).

    Work follows the characters found, not the markup: each is placed by the nearest `<` and
    `>` before it (inside a tag or not) and by the few script, style, textarea and comment
    spans, so a page of megabytes with one such character costs one scan.
    """
    hits = [m.start() for m in _NEEDS_HTML.finditer(page)]
    if not hits:
        return page
    spans = _raw_text_spans(page, hits[-1])
    starts = [start for start, _ in spans]
    out: list[str] = []
    pos = prev = 0
    in_tag = False
    for i in hits:
        lt, gt = page.rfind("<", prev, i), page.rfind(">", prev, i)
        if lt != gt:  # both -1: in the same tag or text as the previous character
            in_tag = lt > gt
        prev = i
        k = bisect_right(starts, i) - 1
        if in_tag or (k >= 0 and i < spans[k][1]):
            continue
        out += [page[pos:i], _SHOWN_HTML[ord(page[i])]]
        pos = i + 1
    out.append(page[pos:])
    return "".join(out)


# Japanese and Korean words mix these scripts as a matter of course.
_CJK = ("CJK", "HIRAGANA", "KATAKANA", "HANGUL", "IDEOGRAPHIC")


def _script(ch: str) -> str | None:
    """The alphabet of a letter, from its Unicode name ("CYRILLIC SMALL LETTER A")."""
    if not ch.isalpha():
        return None
    if ch.isascii():
        return "LATIN"
    try:
        first = unicodedata.name(ch).split(" ", 1)[0]
    except ValueError:
        return None
    return "CJK" if first.startswith(_CJK) else first


_LETTERS = re.compile(r"[^\W\d_]+")
_WORDS = re.compile(r"\w+")


def _mixes(letters: str) -> bool:
    scripts = {s for s in map(_script, letters) if s is not None}
    return len(scripts) > 1


def mixed_script_words(text: str) -> list[str]:
    """The words (identifiers: runs of letters, digits and `_`) of `text` in which one run of
    letters mixes alphabets: `lаbel_id` with a Cyrillic а, not `naïve`, `日本`, `user_名前`."""
    if text.isascii():
        return []
    found: list[str] = []
    for word in _WORDS.findall(text):
        if word.isascii() or word in found:
            continue
        if any(_mixes(run) for run in _LETTERS.findall(word)):
            found.append(word)
    return found


def mixed_scripts(name: str) -> bool:
    """Whether one word of `name` mixes alphabets ("lаbel" with a Cyrillic а); a name whose
    words each keep to one ("日本/readme.py") is not suspicious."""
    return bool(mixed_script_words(name))


def scripts_of(word: str) -> list[str]:
    """The alphabets a word's letters come from, in order of appearance ("LATIN", "CYRILLIC")."""
    seen: list[str] = []
    for s in map(_script, word):
        if s is not None and s not in seen:
            seen.append(s)
    return seen


def csv_cell(value: object) -> object:
    """A value for a CSV cell: text that starts like a formula is prefixed with `'`."""
    if isinstance(value, str) and value.startswith(_FORMULA_START):
        return "'" + value
    return value
