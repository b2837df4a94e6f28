"""A backend that replays recorded assistant turns: drives the agent loop in tests, offline.

Transcript JSON: a list of turns, each
`{"content": "...", "tool_calls": [{"id": "c1", "name": "read_file", "arguments": {...}}]}`;
a call may give `raw_arguments` (a string, possibly malformed JSON) instead of `arguments`.
Optional per turn: `input_tokens`, `output_tokens`, `stop_reason`.

Transcripts recorded before the incremental verdict end with one `submit_verdict` call carrying
the whole verdict; such a turn is replayed as the protocol's `grade_candidate` calls and the
`submit_ranking` that carry the same verdict (`protocol.verdict_to_turns`), so old recordings
still produce their verdicts.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from grading.grader.backends.base import (
    CallOptions,
    Completion,
    Message,
    PermanentBackendError,
    ToolCall,
    ToolSpec,
)
from grading.grader.backends.transport import parse_tool_arguments
from grading.grader.protocol import verdict_to_turns

LEGACY_SUBMIT = "submit_verdict"


class TranscriptExhaustedError(PermanentBackendError):
    """The loop asked for more assistant turns than the transcript recorded."""


@dataclass(frozen=True)
class ScriptedTurn:
    content: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    input_tokens: int = 0
    output_tokens: int = 0
    stop_reason: str = ""


@dataclass(frozen=True)
class ScriptedRequest:
    """What the loop sent on one call, kept for assertions."""

    messages: tuple[Message, ...]
    tools: tuple[ToolSpec, ...]
    max_output_tokens: int
    temperature: float
    seed: int | None
    options: CallOptions = field(default_factory=CallOptions)


@dataclass
class ScriptedBackend:
    transcript: Sequence[ScriptedTurn | Mapping[str, Any]]
    model: str = "scripted"
    name: str = "scripted"
    requests: list[ScriptedRequest] = field(default_factory=list)

    def __post_init__(self) -> None:
        turns = [t if isinstance(t, ScriptedTurn) else turn_from_json(t) for t in self.transcript]
        self._turns = [new for turn in turns for new in _modern(turn)]

    @property
    def messages(self) -> tuple[Message, ...]:
        """The conversation as sent on the latest call."""
        return self.requests[-1].messages if self.requests else ()

    @property
    def remaining(self) -> int:
        return len(self._turns) - len(self.requests)

    def complete(
        self,
        messages: Sequence[Message],
        tools: Sequence[ToolSpec],
        *,
        max_output_tokens: int,
        temperature: float,
        seed: int | None,
        options: CallOptions = CallOptions(),  # noqa: B008 (frozen, never mutated)
    ) -> Completion:
        index = len(self.requests)
        if index >= len(self._turns):
            raise TranscriptExhaustedError(
                f"ScriptedBackend: the loop asked for turn {index + 1}, "
                f"but the transcript records only {len(self._turns)}"
            )
        self.requests.append(
            ScriptedRequest(
                tuple(messages), tuple(tools), max_output_tokens, temperature, seed, options
            )
        )
        turn = self._turns[index]
        return Completion(
            message=Message(role="assistant", content=turn.content, tool_calls=turn.tool_calls),
            input_tokens=turn.input_tokens,
            output_tokens=turn.output_tokens,
            latency_s=0.0,
            stop_reason=turn.stop_reason or ("tool_use" if turn.tool_calls else "end_turn"),
            truncated=turn.stop_reason in ("length", "max_tokens"),
        )


def _modern(turn: ScriptedTurn) -> list[ScriptedTurn]:
    """A legacy `submit_verdict` turn as the incremental protocol's turns (see the module doc)."""
    legacy = [c for c in turn.tool_calls if c.name == LEGACY_SUBMIT and c.arguments is not None]
    if not legacy:
        return [turn]
    args = legacy[0].arguments or {}
    verdict = args.get("verdict", args) if "candidates" not in args else args
    rest = tuple(c for c in turn.tool_calls if c.name != LEGACY_SUBMIT)
    turns = [ScriptedTurn(turn.content, rest)] if rest else []
    for i, calls in enumerate(verdict_to_turns(verdict, per_turn=10_000)):
        tool_calls = tuple(
            ToolCall(f"{legacy[0].id}-{i}-{j}", name, a, raw_arguments=json.dumps(a))
            for j, (name, a) in enumerate(calls)
        )
        turns.append(
            ScriptedTurn("", tool_calls, turn.input_tokens, turn.output_tokens, turn.stop_reason)
        )
    return turns


def turn_from_json(data: Mapping[str, Any]) -> ScriptedTurn:
    calls = []
    for index, raw in enumerate(data.get("tool_calls") or []):
        source = raw["arguments"] if "arguments" in raw else raw.get("raw_arguments", "")
        arguments, raw_text, error = parse_tool_arguments(source)
        calls.append(
            ToolCall(
                id=str(raw.get("id") or f"call_{index}"),
                name=str(raw["name"]),
                arguments=arguments,
                raw_arguments=raw_text,
                error=error,
            )
        )
    return ScriptedTurn(
        content=str(data.get("content", "")),
        tool_calls=tuple(calls),
        input_tokens=int(data.get("input_tokens", 0)),
        output_tokens=int(data.get("output_tokens", 0)),
        stop_reason=str(data.get("stop_reason", "")),
    )


def turn_to_json(turn: ScriptedTurn) -> dict[str, Any]:
    data: dict[str, Any] = {"content": turn.content}
    if turn.tool_calls:
        data["tool_calls"] = [
            {"id": c.id, "name": c.name, "arguments": c.arguments}
            if c.arguments is not None
            else {"id": c.id, "name": c.name, "raw_arguments": c.raw_arguments}
            for c in turn.tool_calls
        ]
    for key in ("input_tokens", "output_tokens", "stop_reason"):
        if getattr(turn, key):
            data[key] = getattr(turn, key)
    return data


def turn_from_completion(completion: Completion) -> ScriptedTurn:
    """Record a live backend's answer so a run can be replayed offline."""
    return ScriptedTurn(
        content=completion.message.content,
        tool_calls=completion.message.tool_calls,
        input_tokens=completion.input_tokens,
        output_tokens=completion.output_tokens,
        stop_reason=completion.stop_reason,
    )


def load_transcript(path: Path) -> list[ScriptedTurn]:
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    if not isinstance(data, list):
        raise ValueError(f"{path}: a transcript is a JSON list of turns")
    return [turn_from_json(turn) for turn in data]


def dump_transcript(turns: Sequence[ScriptedTurn], path: Path) -> None:
    text = json.dumps([turn_to_json(t) for t in turns], indent=2, sort_keys=True)
    Path(path).write_text(text + "\n", encoding="utf-8")
