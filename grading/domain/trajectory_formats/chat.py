"""OpenAI-style chat message lists (AutoCodeRover conversations and the like).

Each message is `{role, content, tool_calls?, tool_call_id?, name?}`; content is a string, null
or a list of parts. system/developer/user messages and assistant text become `message` events;
each assistant tool call (or legacy `function_call`) becomes an `action` whose text is
`name(arguments)`; `tool`/`function` messages become `observation`s named after the call they
answer. A role we do not know becomes a role-less message with the role kept in extra.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from ._common import compact_json, content_text, iter_values, open_json
from .model import (
    JsonValue,
    Role,
    TrajectoryEvent,
    TrajectoryFormatError,
    expect_dict,
    expect_list,
    optional_str,
)

_MESSAGE_ROLES: dict[str, Role] = {
    "system": "system",
    "developer": "system",
    "user": "user",
    "assistant": "assistant",
}


class ChatReader:
    """Converts messages one at a time; remembers tool-call names to label tool results."""

    def __init__(self) -> None:
        self._call_names: dict[str, str] = {}

    def message_events(self, obj: object, path: str) -> Iterator[TrajectoryEvent]:
        message = expect_dict(obj, path)
        role = message.get("role")
        if not isinstance(role, str):
            raise TrajectoryFormatError(f"{path}.role: expected a string")
        text = content_text(message.get("content"), f"{path}.content")
        if role in ("tool", "function"):
            call_id = optional_str(message, "tool_call_id", path)
            name = optional_str(message, "name", path)
            if name is None and call_id is not None:
                name = self._call_names.get(call_id)
            extra: dict[str, JsonValue] = {"tool_call_id": call_id} if call_id else {}
            yield TrajectoryEvent("observation", "tool", text, tool=name, extra=extra)
            return
        mapped = _MESSAGE_ROLES.get(role)
        if mapped is None:
            yield TrajectoryEvent("message", None, text, extra={"role": role})
            return
        if text or mapped != "assistant":
            yield TrajectoryEvent("message", mapped, text)
        if mapped == "assistant":
            yield from self._tool_calls(message, path)

    def _tool_calls(self, message: dict[str, object], path: str) -> Iterator[TrajectoryEvent]:
        calls = message.get("tool_calls")
        if calls is not None:
            for i, call in enumerate(expect_list(calls, f"{path}.tool_calls")):
                call_path = f"{path}.tool_calls[{i}]"
                data = expect_dict(call, call_path)
                call_id = optional_str(data, "id", call_path)
                event = _call_event(data.get("function"), f"{call_path}.function", call_id)
                if call_id is not None and event.tool is not None:
                    self._call_names[call_id] = event.tool
                yield event
        if message.get("function_call") is not None:
            yield _call_event(message["function_call"], f"{path}.function_call", None)


def _call_event(function: object, path: str, call_id: str | None) -> TrajectoryEvent:
    data = expect_dict(function, path)
    name = optional_str(data, "name", path)
    raw = data.get("arguments")
    # Arguments are a JSON string per the API, but some loggers store the parsed object.
    args = raw if isinstance(raw, str) or raw is None else compact_json(raw)
    text = f"{name or ''}({args or ''})"
    extra: dict[str, JsonValue] = {"tool_call_id": call_id} if call_id else {}
    return TrajectoryEvent("action", "assistant", text, tool=name, args=args, extra=extra)


def from_object(obj: object) -> Iterator[TrajectoryEvent]:
    reader = ChatReader()
    for i, message in enumerate(expect_list(obj, "$")):
        yield from reader.message_events(message, f"$[{i}]")


def from_file(path: Path) -> Iterator[TrajectoryEvent]:
    reader = ChatReader()
    with open_json(path) as f:
        for i, (_, message) in enumerate(iter_values(f, {"item"})):
            yield from reader.message_events(message, f"$[{i}]")
