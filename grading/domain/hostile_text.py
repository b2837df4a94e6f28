"""Untrusted text made safe to show and to export, pure.

- `strip_ansi`: test output keeps its words, never its terminal colour and cursor sequences.
- `visible`: control characters (C0 except tab and newline, DEL, C1), bidi controls and
  zero-width characters are shown as visible marks (`␛`, `⟨U+202E⟩`), never acted on: a raw
  ESC would reach the reviewer's terminal when they copy text, and an RLO in a file name or a
  trajectory reorders the text around it ("Trojan Source").
- `mixed_scripts`: whether a name mixes alphabets (`lаbel.py` with a Cyrillic а), to warn.
- `csv_cell`: a text cell a spreadsheet would run as a formula gets a leading `'` (OWASP's
  CSV-injection guidance); JSON Lines and Parquet keep values as they are.
"""

from __future__ import annotations

import re
import unicodedata

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


def strip_ansi(text: str) -> str:
    return _ANSI.sub("", text) if "\x1b" in text or "\x9b" in text else text


def visible(text: str) -> str:
    """The text with every control, bidi and zero-width character shown as a mark."""
    return text.translate(_SHOWN) if _NEEDS.search(text) else text


def _script(ch: str) -> str | None:
    if not ch.isalpha():
        return None
    try:
        return unicodedata.name(ch).split(" ", 1)[0]
    except ValueError:
        return None


_LETTERS = re.compile(r"[^\W\d_]+")


def mixed_scripts(name: str) -> bool:
    """Whether one word of `name` mixes alphabets ("lаbel" with a Cyrillic а); a name whose
    words each keep to one ("日本/readme.py") is not suspicious."""
    for word in _LETTERS.findall(name):
        scripts = {s for s in map(_script, word) if s is not None}
        if len(scripts) > 1:
            return True
    return False


def csv_cell(value: object) -> object:
    """A value for a CSV cell: text that starts like a formula is prefixed with `'`."""
    if isinstance(value, str) and value.startswith(_FORMULA_START):
        return "'" + value
    return value
