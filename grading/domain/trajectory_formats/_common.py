"""Helpers the format readers share: message content, compact JSON, streaming with ijson."""

from __future__ import annotations

import json
from collections.abc import Collection, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO

import ijson

from .model import TrajectoryFormatError, expect_dict, type_name

_SCALAR_EVENTS = frozenset({"string", "number", "boolean", "null"})
_BOM = b"\xef\xbb\xbf"


def content_text(content: object, path: str) -> str:
    """Flatten OpenAI-style message content: a string, null, or a list of parts.

    Non-text parts (images, audio) become a `[type]` placeholder so the reader sees that
    something was there without us storing a base64 blob.
    """
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        raise TrajectoryFormatError(
            f"{path}: expected a string or a list of parts, got {type_name(content)}"
        )
    pieces: list[str] = []
    for i, part in enumerate(content):
        if isinstance(part, str):
            pieces.append(part)
            continue
        data = expect_dict(part, f"{path}[{i}]")
        part_type = data.get("type", "text")
        text = data.get("text")
        if isinstance(text, str):
            pieces.append(text)
        else:
            pieces.append(f"[{part_type}]")
    return "\n".join(pieces)


def compact_json(value: object) -> str:
    # ensure_ascii=False keeps non-ASCII text readable; NUL is escaped by json either way.
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def number_fields(data: Mapping[str, object], keys: Collection[str]) -> dict[str, int | float]:
    """The numeric (non-boolean) values among `keys`, e.g. token counts and costs."""
    return {
        key: value
        for key in keys
        if isinstance(value := data.get(key), int | float) and not isinstance(value, bool)
    }


@contextmanager
def open_json(path: Path) -> Iterator[BinaryIO]:
    """Open a JSON file for ijson, skipping a UTF-8 byte-order mark as json.loads would."""
    with path.open("rb") as f:
        if f.read(len(_BOM)) != _BOM:
            f.seek(0)
        yield f


def iter_values(
    f: BinaryIO, prefixes: Collection[str], arrays: Collection[str] = ()
) -> Iterator[tuple[str, object]]:
    """Yield (prefix, value) for every complete JSON value found at one of `prefixes`.

    Prefixes are ijson's ("trajectory.item", "info.exit_status"). Only the wanted values are
    built in memory, one at a time; everything else streams past as parser events. A prefix in
    `arrays` must hold a list: anything else raises, as the in-memory readers do.
    """
    events = ijson.parse(f, use_float=True)
    for prefix, event, value in events:
        if prefix in arrays and (event in _SCALAR_EVENTS or event == "start_map"):
            raise TrajectoryFormatError(f"$.{prefix}: expected a list")
        if prefix not in prefixes:
            continue
        if event in _SCALAR_EVENTS:
            yield prefix, value
        elif event in ("start_map", "start_array"):
            end = "end_map" if event == "start_map" else "end_array"
            builder = ijson.ObjectBuilder()
            builder.event(event, value)
            # Nested values have longer prefixes, so the first matching end closes this one.
            for inner_prefix, inner_event, inner_value in events:
                builder.event(inner_event, inner_value)
                if inner_prefix == prefix and inner_event == end:
                    break
            yield prefix, builder.value


def json_error(err: Exception) -> TrajectoryFormatError:
    """Turn an ijson parse error into our error type with a one-line message."""
    raw = err.args[0] if err.args else str(err)
    message = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else str(raw)
    first_line = message.strip().splitlines()[0] if message.strip() else "parse error"
    if "UTF8" in message or "UTF-8" in message:
        # We reject rather than replace: a silently altered trajectory is worse than a clear
        # error, and every producer we know writes UTF-8.
        return TrajectoryFormatError(f"$: not valid UTF-8 JSON: {first_line}")
    return TrajectoryFormatError(f"$: not valid JSON: {first_line}")
