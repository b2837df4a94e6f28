"""SWE-agent v0.x `.traj` files (also CodeR, which adds an agent name per history entry).

Shape: `{"environment", "trajectory": [{thought, action, observation, response, state}],
"history": [{role, content, agent?}], "info": {exit_status, submission, model_stats}}`.

Mapping:
- a header `message` (role user) with the first user message of `history`: the problem
  statement as the agent saw it. The rest of `history` repeats `trajectory` with the prompt
  templates around it, so it is skipped; the system prompt is the same for every attempt.
- per step: `thought`, `action` (tool = first word of the command, args = the rest) and
  `observation`; a step field that is absent or null gives no event. `response` is thought +
  action again and is dropped; a short `state` is kept in the observation's extra.
- a footer `message` with role None carrying `info.exit_status` and `info.model_stats` (tokens,
  cost) in extra. `info.submission` is the final patch, which is stored on its own.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from ._common import content_text, iter_values, open_json
from .model import (
    JsonValue,
    TrajectoryEvent,
    expect_dict,
    expect_json_object,
    expect_list,
    optional_str,
)

# SWE-agent 1.x puts whole diffs in `state`; only small states are worth repeating per step.
_MAX_STATE_CHARS = 2000
# SWE-agent's single-agent label; CodeR's role names (Programmer, Tester…) are worth keeping.
_DEFAULT_AGENT = "primary"


def from_object(obj: object) -> Iterator[TrajectoryEvent]:
    data = expect_dict(obj, "$")
    if "history" in data:
        history = expect_list(data["history"], "$.history")
        for i, item in enumerate(history):
            header = header_event(item, f"$.history[{i}]")
            if header is not None:
                yield header
                break
    steps = expect_list(data.get("trajectory", []), "$.trajectory")
    for i, step in enumerate(steps):
        yield from step_events(step, f"$.trajectory[{i}]")
    if "info" in data:
        info = expect_dict(data["info"], "$.info")
        footer = footer_event(info.get("exit_status"), info.get("model_stats"))
        if footer is not None:
            yield footer


def from_file(path: Path) -> Iterator[TrajectoryEvent]:
    # First pass: `history` may come after `trajectory`, and the header must come first. The
    # pass stops at the first user message; if there is none it reads the file to the end.
    with open_json(path) as f:
        for i, (_, item) in enumerate(iter_values(f, {"history.item"}, arrays={"history"})):
            header = header_event(item, f"$.history[{i}]")
            if header is not None:
                yield header
                break
    exit_status: object = None
    model_stats: object = None
    wanted = {"trajectory.item", "info.exit_status", "info.model_stats"}
    with open_json(path) as f:
        step = 0
        for prefix, value in iter_values(f, wanted, arrays={"trajectory"}):
            if prefix == "trajectory.item":
                yield from step_events(value, f"$.trajectory[{step}]")
                step += 1
            elif prefix == "info.exit_status":
                exit_status = value
            else:
                model_stats = value
    footer = footer_event(exit_status, model_stats)
    if footer is not None:
        yield footer


def header_event(item: object, path: str) -> TrajectoryEvent | None:
    """The problem statement event if `item` is the first user message, else None."""
    message = expect_dict(item, path)
    if message.get("role") != "user":
        return None
    text = content_text(message.get("content"), f"{path}.content")
    return TrajectoryEvent("message", "user", text, extra=_agent_extra(message))


def step_events(step: object, path: str) -> Iterator[TrajectoryEvent]:
    data = expect_dict(step, path)
    extra = _agent_extra(data)
    thought = optional_str(data, "thought", path)
    action = optional_str(data, "action", path)
    observation = optional_str(data, "observation", path)
    state = data.get("state")
    tool: str | None = None
    if thought is not None:
        yield TrajectoryEvent("thought", "assistant", thought, extra=extra)
    if action is not None:
        parts = action.strip().split(None, 1)
        tool = parts[0] if parts else None
        args = parts[1] if len(parts) > 1 else None
        yield TrajectoryEvent("action", "assistant", action, tool=tool, args=args, extra=extra)
    if observation is not None:
        obs_extra = dict(extra)
        if isinstance(state, str) and state.strip() and len(state) <= _MAX_STATE_CHARS:
            obs_extra["state"] = state.strip()
        yield TrajectoryEvent("observation", "tool", observation, tool=tool, extra=obs_extra)


def footer_event(exit_status: object, model_stats: object) -> TrajectoryEvent | None:
    extra: dict[str, JsonValue] = {}
    if exit_status is not None:
        extra["exit_status"] = optional_str({"exit_status": exit_status}, "exit_status", "$.info")
    if model_stats is not None:
        extra["model_stats"] = expect_json_object(model_stats, "$.info.model_stats")
    if not extra:
        return None
    text = f"exit status: {exit_status}" if exit_status is not None else ""
    return TrajectoryEvent("message", None, text, extra=extra)


def _agent_extra(data: dict[str, object]) -> dict[str, JsonValue]:
    agent = data.get("agent")
    if isinstance(agent, str) and agent != _DEFAULT_AGENT:
        return {"agent": agent}
    return {}
