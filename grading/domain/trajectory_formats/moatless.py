"""Moatless-tools `AgenticLoop` trajectories (mid-2024).

Shape: `{"name": "AgenticLoop", "initial_message", "transitions": [{name, state, actions:
[{action: {...}, output: {...}, completion_cost, input_tokens, output_tokens}]}], "info"}`.

Mapping: `initial_message` → a user message. Per action: its `scratch_pad` → thought; the rest
of the action → an action event whose tool is the transition name (SearchCode, EditCode…) and
whose args are compact JSON, with token counts and cost in extra; a non-empty `output` → an
observation (its message and diff, else compact JSON); non-empty `output.errors` → an error.
`info` → a footer message (role None) with status, duration and cost. Transition `state` and
`info.evaluation_name` are dropped: they are configuration and name the model.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from ._common import compact_json, iter_values, number_fields, open_json
from .model import (
    JsonValue,
    TrajectoryEvent,
    TrajectoryFormatError,
    expect_dict,
    expect_list,
    optional_str,
)

_USAGE_KEYS = ("input_tokens", "output_tokens", "completion_cost")
_INFO_NUMBERS = ("duration", "total_cost")
# Fields that read better than the whole JSON as an action's text, most telling first.
_TEXT_FIELDS = ("finish", "instructions", "content")


def initial_event(value: object) -> TrajectoryEvent:
    if not isinstance(value, str):
        raise TrajectoryFormatError("$.initial_message: expected a string")
    return TrajectoryEvent("message", "user", value)


def transition_events(obj: object, path: str) -> Iterator[TrajectoryEvent]:
    transition = expect_dict(obj, path)
    name = optional_str(transition, "name", path)
    for i, item in enumerate(expect_list(transition.get("actions", []), f"{path}.actions")):
        yield from _action_events(item, name, f"{path}.actions[{i}]")


def _action_events(obj: object, name: str | None, path: str) -> Iterator[TrajectoryEvent]:
    step = expect_dict(obj, path)
    action = expect_dict(step.get("action", {}), f"{path}.action")
    scratch_pad = optional_str(action, "scratch_pad", f"{path}.action")
    if scratch_pad:
        yield TrajectoryEvent("thought", "assistant", scratch_pad)
    rest = {k: v for k, v in action.items() if k != "scratch_pad"}
    args = compact_json(rest) if rest else None
    text = next((v for k in _TEXT_FIELDS if isinstance(v := rest.get(k), str) and v), args)
    usage: dict[str, JsonValue] = dict(number_fields(step, _USAGE_KEYS))
    yield TrajectoryEvent("action", "assistant", text or name or "", name, args, usage)
    output = step.get("output")
    if output is None:
        return
    result = expect_dict(output, f"{path}.output")
    errors = result.get("errors")
    if isinstance(errors, list) and errors:
        yield TrajectoryEvent("error", "tool", "\n".join(map(str, errors)), tool=name)
    shown = {k: v for k, v in result.items() if k != "errors"}
    if not shown:
        return
    pieces = [v for k in ("message", "diff") if isinstance(v := shown.get(k), str) and v]
    observed = "\n".join(pieces) if pieces else compact_json(shown)
    yield TrajectoryEvent("observation", "tool", observed, tool=name)


def footer_event(status: object, numbers: dict[str, int | float]) -> TrajectoryEvent | None:
    extra: dict[str, JsonValue] = dict(numbers)
    if status is not None:
        if not isinstance(status, str):
            raise TrajectoryFormatError("$.info.status: expected a string")
        extra["status"] = status
    if not extra:
        return None
    text = f"exit status: {status}" if status is not None else ""
    return TrajectoryEvent("message", None, text, extra=extra)


def from_object(obj: object) -> Iterator[TrajectoryEvent]:
    data = expect_dict(obj, "$")
    if data.get("initial_message") is not None:
        yield initial_event(data["initial_message"])
    transitions = expect_list(data.get("transitions", []), "$.transitions")
    for i, transition in enumerate(transitions):
        yield from transition_events(transition, f"$.transitions[{i}]")
    if "info" in data:
        info = expect_dict(data["info"], "$.info")
        footer = footer_event(info.get("status"), number_fields(info, _INFO_NUMBERS))
        if footer is not None:
            yield footer


def from_file(path: Path) -> Iterator[TrajectoryEvent]:
    # First pass for the header, which need not come before the transitions.
    with open_json(path) as f:
        for _, value in iter_values(f, {"initial_message"}):
            if value is not None:
                yield initial_event(value)
            break
    info: dict[str, object] = {}
    wanted = {"transitions.item", "info.status", *(f"info.{k}" for k in _INFO_NUMBERS)}
    with open_json(path) as f:
        index = 0
        for prefix, value in iter_values(f, wanted, arrays={"transitions"}):
            if prefix == "transitions.item":
                yield from transition_events(value, f"$.transitions[{index}]")
                index += 1
            else:
                info[prefix.removeprefix("info.")] = value
    footer = footer_event(info.get("status"), number_fields(info, _INFO_NUMBERS))
    if footer is not None:
        yield footer
