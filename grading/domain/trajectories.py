"""Read agent trajectories of several formats as one stream of `TrajectoryEvent`s.

Formats: our native event list, SWE-agent/CodeR `.traj`, OpenHands event lists, OpenAI-style
chat messages (AutoCodeRover) and Moatless `AgenticLoop` files. What each maps to is documented
in its reader under `trajectory_formats/`.

Files are streamed with ijson: memory is bounded by the largest single step, not the file. The
format is sniffed from the top-level keys (or the first list item's keys) without building any
value. Bytes that are not UTF-8 raise `TrajectoryFormatError` rather than being replaced, and
text is otherwise passed through unchanged (NUL included). One known difference between the two
paths: a lone UTF-16 surrogate escape (`"\\ud800"`) becomes "?" under ijson but stays a
surrogate under `json.loads`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

import ijson

from grading.domain.wording import shown

from .trajectory_formats import chat, moatless, openhands, swe_agent
from .trajectory_formats._common import iter_values, json_error, open_json
from .trajectory_formats.model import (
    JsonValue,
    TrajectoryEvent,
    TrajectoryFormat,
    TrajectoryFormatError,
    expect_list,
    type_name,
)

__all__ = [
    "JsonValue",
    "TrajectoryEvent",
    "TrajectoryFormat",
    "TrajectoryFormatError",
    "detect_format",
    "events_from_object",
    "iter_events_from_file",
]


def detect_format(obj: object) -> TrajectoryFormat:
    """Which format an already-parsed trajectory is in; same rules as the file sniffer."""
    if isinstance(obj, list):
        if not obj:
            return TrajectoryFormat.NATIVE
        first = obj[0]
        if isinstance(first, list):
            return TrajectoryFormat.OPENHANDS
        found = _classify_item(first.keys()) if isinstance(first, dict) else None
        if found is None:
            raise TrajectoryFormatError(
                f"unknown trajectory format: {type_name(first)} with keys "
                f"{list(first)[:10] if isinstance(first, dict) else []} in a list"
            )
        return found
    if isinstance(obj, dict):
        for key, value in obj.items():
            history_items = value if key == "history" and isinstance(value, list) else None
            found = _classify_top_key(key, history_items)
            if found is not None:
                return found
        if isinstance(obj.get("history"), list):
            # An empty OpenHands history: nothing to read, but not an error either.
            return TrajectoryFormat.OPENHANDS
        raise TrajectoryFormatError(f"unknown trajectory format: object with keys {list(obj)[:10]}")
    raise TrajectoryFormatError(f"unknown trajectory format: top level is {type_name(obj)}")


def events_from_object(
    obj: object, fmt: TrajectoryFormat | str | None = None
) -> Iterator[TrajectoryEvent]:
    chosen = _coerce(fmt) if fmt is not None else detect_format(obj)
    return _OBJECT_READERS[chosen](obj)


def iter_events_from_file(
    path: Path, fmt: TrajectoryFormat | str | None = None
) -> Iterator[TrajectoryEvent]:
    """Stream the events of a trajectory file.

    The format is checked (or sniffed) now, so a bad format raises at the call; parse errors
    further into the file raise while iterating. Some formats read the file twice because a
    header they must emit first may be stored after the steps.
    """
    path = Path(path)  # tolerate a str from callers that skip the annotation
    chosen = _coerce(fmt) if fmt is not None else _guarded(lambda: _sniff(path))
    return _guarded_iter(_FILE_READERS[chosen](path))


def _read_native(obj: object) -> Iterator[TrajectoryEvent]:
    for i, item in enumerate(expect_list(obj, "$")):
        yield TrajectoryEvent.from_json(item, f"$[{i}]")


def _read_native_file(path: Path) -> Iterator[TrajectoryEvent]:
    with open_json(path) as f:
        for i, (_, item) in enumerate(iter_values(f, {"item"})):
            yield TrajectoryEvent.from_json(item, f"$[{i}]")


_OBJECT_READERS: dict[TrajectoryFormat, Callable[[object], Iterator[TrajectoryEvent]]] = {
    TrajectoryFormat.NATIVE: _read_native,
    TrajectoryFormat.SWE_AGENT: swe_agent.from_object,
    TrajectoryFormat.OPENHANDS: openhands.from_object,
    TrajectoryFormat.CHAT: chat.from_object,
    TrajectoryFormat.MOATLESS: moatless.from_object,
}
_FILE_READERS: dict[TrajectoryFormat, Callable[[Path], Iterator[TrajectoryEvent]]] = {
    TrajectoryFormat.NATIVE: _read_native_file,
    TrajectoryFormat.SWE_AGENT: swe_agent.from_file,
    TrajectoryFormat.OPENHANDS: openhands.from_file,
    TrajectoryFormat.CHAT: chat.from_file,
    TrajectoryFormat.MOATLESS: moatless.from_file,
}


def _classify_item(keys: Iterable[str]) -> TrajectoryFormat | None:
    """The format of a top-level list, from the keys of its first item."""
    key_set = set(keys)
    if "kind" in key_set:
        return TrajectoryFormat.NATIVE
    if key_set & {"action", "observation"}:
        return TrajectoryFormat.OPENHANDS
    if "role" in key_set:
        return TrajectoryFormat.CHAT
    return None


def _classify_top_key(key: str, history: list[Any] | None) -> TrajectoryFormat | None:
    """The format implied by one top-level key, or None to keep looking.

    `history` is the history list when `key` is "history": SWE-agent's holds chat messages,
    OpenHands' holds events (or old [action, observation] pairs).
    """
    if key == "trajectory":
        return TrajectoryFormat.SWE_AGENT
    if key == "transitions":
        return TrajectoryFormat.MOATLESS
    if key == "history" and history:
        first = history[0]
        if isinstance(first, list):
            return TrajectoryFormat.OPENHANDS
        if isinstance(first, dict):
            found = _classify_item(first.keys())
            if found is TrajectoryFormat.CHAT:
                return TrajectoryFormat.SWE_AGENT
            if found is TrajectoryFormat.OPENHANDS:
                return found
    return None


def _sniff(path: Path) -> TrajectoryFormat:
    """`detect_format` for a file, from parser events only (nothing is built)."""
    with open_json(path) as f:
        events = ijson.parse(f, use_float=True)
        _, event, _ = next(events, ("", "eof", None))
        if event == "start_array":
            return _sniff_list(events)
        if event != "start_map":
            what = "empty" if event == "eof" else f"a {event}"
            raise TrajectoryFormatError(f"unknown trajectory format: top level is {what}")
        keys: list[str] = []
        saw_history = False
        for prefix, event, value in events:
            if prefix == "" and event == "map_key":
                keys.append(value)
                if value in ("trajectory", "transitions"):
                    return _coerce_found(_classify_top_key(value, None))
            elif prefix == "history" and event == "start_array":
                saw_history = True
                found = _sniff_history(events)
                if found is not None:
                    return found
        if saw_history:
            return TrajectoryFormat.OPENHANDS
        raise TrajectoryFormatError(f"unknown trajectory format: object with keys {keys[:10]}")


def _sniff_list(events: Iterator[tuple[str, str, Any]]) -> TrajectoryFormat:
    _, event, _ = next(events)
    if event == "end_array":
        return TrajectoryFormat.NATIVE
    if event == "start_array":
        return TrajectoryFormat.OPENHANDS
    if event != "start_map":
        raise TrajectoryFormatError(f"unknown trajectory format: a {event} in a list")
    keys = _first_item_keys(events, "item")
    found = _classify_item(keys)
    if found is None:
        raise TrajectoryFormatError(f"unknown trajectory format: object with keys {keys[:10]}")
    return found


def _sniff_history(events: Iterator[tuple[str, str, Any]]) -> TrajectoryFormat | None:
    _, event, _ = next(events)
    if event == "start_array":
        return TrajectoryFormat.OPENHANDS
    if event != "start_map":
        return None
    keys = _first_item_keys(events, "history.item")
    return _classify_top_key("history", [dict.fromkeys(keys)])


def _first_item_keys(events: Iterator[tuple[str, str, Any]], prefix: str) -> list[str]:
    # Reads past the item's nested values without building them.
    keys: list[str] = []
    for item_prefix, event, value in events:
        if item_prefix == prefix and event == "map_key":
            keys.append(value)
        elif item_prefix == prefix and event == "end_map":
            break
    return keys


def _coerce(fmt: TrajectoryFormat | str) -> TrajectoryFormat:
    try:
        return TrajectoryFormat(fmt)
    except ValueError:
        raise TrajectoryFormatError(f"unknown trajectory format: {shown(fmt)}") from None


def _coerce_found(found: TrajectoryFormat | None) -> TrajectoryFormat:
    assert found is not None  # only called for keys that always classify
    return found


def _guarded[T](thunk: Callable[[], T]) -> T:
    try:
        return thunk()
    except ijson.JSONError as err:
        raise json_error(err) from err


def _guarded_iter(events: Iterator[TrajectoryEvent]) -> Iterator[TrajectoryEvent]:
    try:
        yield from events
    except ijson.JSONError as err:
        raise json_error(err) from err
