"""JSON as the importers and the API read it: the standard decoder, refusing what would crash
later or cannot be stored, with a clear message and the JSON path where it stands.

- nesting deeper than `MAX_DEPTH` (a nesting bomb: `RecursionError` in the decoder, in schema
  validation or when the row is written);
- integers with more than `MAX_INT_DIGITS` digits (Python refuses to convert thousands of
  digits with a `ValueError`) and integers outside PostgreSQL's bigint;
- NaN, Infinity and floats that overflow to infinity (not JSON; PostgreSQL's jsonb refuses them);
- lone surrogates (`"\\ud800"` decodes to a string no UTF-8 column or file can hold).

Column-specific ranges (a step is a 32-bit integer) are the format schema's business.
"""

from __future__ import annotations

import json
import math
from typing import Any

MAX_DEPTH = 64
MAX_INT_DIGITS = 20
INT64_MAX = 2**63 - 1


class JsonLimitError(ValueError):
    """A decoded value the project will not store; `path` is where it stands ("$.a[2]")."""

    def __init__(self, message: str, path: str = "$") -> None:
        if len(path) > 120:  # a nesting bomb's path would be as long as the bomb
            path = path[:100] + "…"
        super().__init__(f"{path}: {message}" if path != "$" else message)
        self.message = message
        self.path = path


def error_text(exc: json.JSONDecodeError) -> str:
    """The decoder's message with its column: "Expecting ',' delimiter at column 7"; messages
    that already end in "at" ("Unterminated string starting at") take the column directly."""
    joint = " " if exc.msg.endswith(" at") else " at "
    return f"{exc.msg}{joint}column {exc.colno}"


def _parse_int(text: str) -> int:
    digits = len(text.lstrip("-"))
    if digits > MAX_INT_DIGITS:
        raise JsonLimitError(f"an integer with {digits} digits (at most {MAX_INT_DIGITS})")
    return int(text)


def _parse_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise JsonLimitError(f"number {text[:40]} is out of range")
    return value


def _parse_constant(name: str) -> float:
    raise JsonLimitError(f"{name} is not JSON (and cannot be stored)")


# The standard decoder with the hooks above (`raw_decode` for readers that walk a document).
DECODER = json.JSONDecoder(
    parse_int=_parse_int, parse_float=_parse_float, parse_constant=_parse_constant
)


def decode(text: str) -> Any:
    """Decode without `check` (for callers that check the value themselves)."""
    try:
        return DECODER.decode(text)
    except RecursionError as exc:
        raise JsonLimitError(f"nested deeper than {MAX_DEPTH} levels") from exc


def loads(text: str | bytes) -> Any:
    """`json.loads`, then `check`. Malformed JSON still raises `json.JSONDecodeError`."""
    if isinstance(text, bytes):
        text = text.decode("utf-8")
    value = decode(text)
    check(value)
    return value


def _surrogate(text: str) -> int | None:
    if text.isascii():
        return None
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        return exc.start
    return None


# Kept whole (C901): one iterative walk with its stack; each branch is one JSON type's rule.
def check(value: Any, path: str = "$") -> None:  # noqa: C901
    """Refuse what `loads` refuses in an already decoded value (iteratively: no recursion)."""
    stack: list[tuple[Any, str, int]] = [(value, path, 0)]
    while stack:
        item, where, depth = stack.pop()
        if isinstance(item, str):
            pos = _surrogate(item)
            if pos is not None:
                raise JsonLimitError(f"a lone surrogate (U+{ord(item[pos]):04X}) at {pos}", where)
        elif isinstance(item, bool) or item is None:
            continue
        elif isinstance(item, int):
            if abs(item) > INT64_MAX:
                raise JsonLimitError("an integer outside the 64-bit range", where)
        elif isinstance(item, float):
            if not math.isfinite(item):
                raise JsonLimitError(f"{item} is not JSON (and cannot be stored)", where)
        elif isinstance(item, dict | list):
            if depth >= MAX_DEPTH:
                raise JsonLimitError(f"nested deeper than {MAX_DEPTH} levels", where)
            if isinstance(item, dict):
                for key, child in item.items():
                    key = str(key)
                    pos = _surrogate(key)
                    if pos is not None:
                        raise JsonLimitError("a lone surrogate in a key", where)
                    stack.append((child, f"{where}.{key}", depth + 1))
            else:
                stack.extend((child, f"{where}[{i}]", depth + 1) for i, child in enumerate(item))
