"""OpenHands event streams: a list of events, or `{"history": [...]}` (SWE-bench output.jsonl).

An event is `{id, source, message, action, args}` or `{id, source, message, observation,
content, extras}`. Older outputs store history as `[action, observation]` pairs; both are read.

Mapping: `message`/`system` actions → message events; `think` → thought; any other action →
an optional thought (its `args.thought`) then an action whose tool is the action name and whose
args are the command/code/path/url, or the remaining args as compact JSON. `error`
observations → error; other observations → observation with `content` as text (a command's
exit code goes into extra). `null` events carry nothing and are skipped. Kinds we do not know
map the same generic way instead of failing. Token metrics and the LLM response are dropped:
they are large and name the model, which reviewers must not see.
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

_SOURCE_ROLES: dict[str, Role] = {"user": "user", "agent": "assistant", "environment": "tool"}
# The one argument that says what an action does, where there is one.
_PRIMARY_ARG = {
    "run": "command",
    "run_ipython": "code",
    "read": "path",
    "browse": "url",
    "browse_interactive": "browser_actions",
}
_SKIPPED_KINDS = frozenset({"null"})


def event_events(obj: object, path: str) -> Iterator[TrajectoryEvent]:
    if isinstance(obj, list):
        # Old `[action, observation]` pairs; an empty object stands for "no observation".
        for i, half in enumerate(obj):
            if half != {}:
                yield from event_events(half, f"{path}[{i}]")
        return
    event = expect_dict(obj, path)
    if "action" in event:
        yield from _action_events(event, path)
    elif "observation" in event:
        yield from _observation_events(event, path)
    else:
        raise TrajectoryFormatError(f"{path}: expected an 'action' or 'observation' key")


def _action_events(event: dict[str, object], path: str) -> Iterator[TrajectoryEvent]:
    kind = _kind(event, "action", path)
    if kind in _SKIPPED_KINDS:
        return
    args = expect_dict(event.get("args", {}), f"{path}.args")
    role = _role(event, default="assistant")
    message = optional_str(event, "message", path) or ""
    thought = args.get("thought")
    if thought is not None and not isinstance(thought, str):
        raise TrajectoryFormatError(f"{path}.args.thought: expected a string")
    if kind in ("message", "system"):
        text = content_text(args.get("content"), f"{path}.args.content") or message
        yield TrajectoryEvent("message", "system" if kind == "system" else role, text)
        return
    if kind == "think":
        yield TrajectoryEvent("thought", role, thought or message)
        return
    if thought:
        yield TrajectoryEvent("thought", role, thought)
    if kind == "finish":
        final = args.get("final_thought")
        text = final if isinstance(final, str) and final else message
        yield TrajectoryEvent("action", role, text, tool="finish")
        return
    primary = _PRIMARY_ARG.get(kind)
    value = args.get(primary) if primary else None
    if isinstance(value, str):
        action_args: str | None = value
    else:
        rest = {k: v for k, v in args.items() if k != "thought" and v not in (None, "", [], {})}
        action_args = compact_json(rest) if rest else None
    yield TrajectoryEvent("action", role, message or action_args or kind, kind, action_args)


def _observation_events(event: dict[str, object], path: str) -> Iterator[TrajectoryEvent]:
    kind = _kind(event, "observation", path)
    if kind in _SKIPPED_KINDS:
        return
    role = _role(event, default="tool")
    text = optional_str(event, "content", path) or optional_str(event, "message", path) or ""
    if kind == "error":
        yield TrajectoryEvent("error", role, text, tool=kind)
        return
    extras = expect_dict(event.get("extras", {}), f"{path}.extras")
    extra: dict[str, JsonValue] = {}
    metadata = extras.get("metadata")
    # Newer OpenHands nests the exit code in metadata; older versions put it in extras.
    exit_code = metadata.get("exit_code") if isinstance(metadata, dict) else None
    if exit_code is None:
        exit_code = extras.get("exit_code")
    if isinstance(exit_code, int) and not isinstance(exit_code, bool):
        extra["exit_code"] = exit_code
    if kind == "agent_state_changed" and not text:
        state = extras.get("agent_state")
        text = state if isinstance(state, str) else ""
    yield TrajectoryEvent("observation", role, text, tool=kind, extra=extra)


def _kind(event: dict[str, object], key: str, path: str) -> str:
    kind = event[key]
    if not isinstance(kind, str):
        raise TrajectoryFormatError(f"{path}.{key}: expected a string")
    return kind


def _role(event: dict[str, object], default: Role) -> Role:
    source = event.get("source")
    return _SOURCE_ROLES.get(source, default) if isinstance(source, str) else default


def from_object(obj: object) -> Iterator[TrajectoryEvent]:
    if isinstance(obj, dict):
        items = expect_list(obj.get("history", []), "$.history")
        base = "$.history"
    else:
        items = expect_list(obj, "$")
        base = "$"
    for i, item in enumerate(items):
        yield from event_events(item, f"{base}[{i}]")


def from_file(path: Path) -> Iterator[TrajectoryEvent]:
    with open_json(path) as f:
        # Exactly one of the two prefixes can occur: the top level is a list or an object.
        counters = {"item": 0, "history.item": 0}
        for prefix, value in iter_values(f, counters.keys(), arrays={"history"}):
            base = "$" if prefix == "item" else "$.history"
            yield from event_events(value, f"{base}[{counters[prefix]}]")
            counters[prefix] += 1
