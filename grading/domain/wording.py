"""How messages show things to people (pure; every message uses these).

`plural`: counts as people read them (`1 problem`, `2 problems`). `shown`: a value from the
input as it was written, in JSON (`null`, `true`, `"gagar.group.v9"`), never as Python's repr
(`None`, `True`, `'gagar.group.v9'`), which is not what the user sent. `schema_message`: a JSON
Schema error in those words, with the value found.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

# A message must not repeat a megabyte back: longer values are cut, with an ellipsis.
SHOWN_CHARS = 80


def plural(n: int, word: str, many: str | None = None) -> str:
    """`n` and the noun, singular for exactly one; `many` for irregular plurals."""
    return f"{n} {word}" if n == 1 else f"{n} {many or word + 's'}"


def shown(value: Any, limit: int = SHOWN_CHARS) -> str:
    """`value` as JSON text, cut to about `limit` characters (a list or object is shown by its
    start, a string keeps its opening quote)."""
    try:
        text = json.dumps(value, ensure_ascii=False, allow_nan=True, default=str)
    except (TypeError, ValueError, RecursionError):
        text = str(value)
    return text if len(text) <= limit else text[: max(limit - 20, 10)] + "…"


def string_path(value: object, path: str, hit: Callable[[str], bool]) -> str | None:
    """The JSON path (`$.task.problem_statement`) of the first string in `value`, key or value,
    that `hit` accepts; a key is shown as JSON (what it holds may not print). None if none."""
    if isinstance(value, str):
        return path if hit(value) else None
    if isinstance(value, dict):
        for key, item in value.items():
            if hit(str(key)):
                return f"{path}.{shown(key)}"
            found = string_path(item, f"{path}.{key}", hit)
            if found:
                return found
    if isinstance(value, list):
        for index, item in enumerate(value):
            found = string_path(item, f"{path}[{index}]", hit)
            if found:
                return found
    return None


def listed(values: Any) -> str:
    """Values shown one by one and joined: `"a", "b" or "c"`."""
    items = [shown(v) for v in values]
    if len(items) <= 1:
        return "".join(items)
    return ", ".join(items[:-1]) + " or " + items[-1]


_KINDS = {
    "object": "an object",
    "array": "a list",
    "string": "a string",
    "integer": "an integer",
    "number": "a number",
    "boolean": "true or false",
    "null": "null",
}


def _kinds(expected: Any) -> str:
    names = expected if isinstance(expected, list) else [expected]
    words = [_KINDS.get(str(n), str(n)) for n in names]
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " or " + words[-1]


def _missing(instance: Any, required: Any) -> list[str]:
    if not isinstance(instance, dict) or not isinstance(required, list):
        return []
    return [str(k) for k in required if k not in instance]


def _unexpected(instance: Any, schema: Any) -> list[str]:
    if not isinstance(instance, dict) or not isinstance(schema, dict):
        return []
    known = schema.get("properties") or {}
    return [str(k) for k in instance if k not in known]


def schema_message(  # noqa: C901 (one branch per JSON Schema keyword, flat)
    validator: str, expected: Any, instance: Any, schema: Any, fallback: str
) -> str:
    """A JSON Schema error (the keyword that failed, its value in the schema, the value found,
    the subschema) in plain words with the value found; `fallback` (jsonschema's own message)
    for keywords not worded here."""
    found = shown(instance)
    if validator == "type":
        return f"expected {_kinds(expected)}, found {found}"
    if validator == "const":
        return f"expected {shown(expected)}, found {found}"
    if validator == "enum":
        return f"expected one of {listed(expected)}, found {found}"
    if validator == "required":
        missing = _missing(instance, expected)
        if missing:
            names = ", ".join(missing)
            return f"required propert{'y' if len(missing) == 1 else 'ies'} missing: {names}"
    if validator == "additionalProperties":
        extra = _unexpected(instance, schema)
        if extra:
            return f"unknown propert{'y' if len(extra) == 1 else 'ies'}: {', '.join(extra)}"
    if validator in ("minimum", "exclusiveMinimum", "maximum", "exclusiveMaximum"):
        words = {
            "minimum": "at least",
            "exclusiveMinimum": "more than",
            "maximum": "at most",
            "exclusiveMaximum": "less than",
        }[validator]
        return f"must be {words} {shown(expected)}, found {found}"
    if validator == "minLength" and isinstance(instance, str):
        return f"too short: {len(instance)} characters, at least {expected}; found {found}"
    if validator == "maxLength" and isinstance(instance, str):
        # The length, not the value: a megabyte id quoted back helps no one.
        return f"too long: {len(instance):,} characters, at most {expected}"
    if validator == "pattern":
        return f"must match {shown(expected)}, found {found}"
    if validator == "minItems":
        return f"must have at least {expected} items, found {len(instance)}"
    if validator == "format":
        return f"must be a valid {expected}, found {found}"
    return fallback
