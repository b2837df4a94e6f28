"""The one small interface every grader backend implements.

A backend turns a conversation plus tool specs into the next assistant message. It knows nothing
about groups, verdicts or Django; the agent loop (`grading.grader.loop`) drives it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

Role = Literal["system", "user", "assistant", "tool"]


@dataclass(frozen=True)
class ToolSpec:
    name: str
    description: str
    parameters: dict[str, Any]  # JSON Schema of the arguments object


@dataclass(frozen=True)
class ToolCall:
    id: str
    name: str
    # None when the model sent arguments that are not a JSON object; `raw_arguments` keeps them.
    arguments: dict[str, Any] | None
    raw_arguments: str = ""
    error: str | None = None


@dataclass(frozen=True)
class Message:
    role: Role
    content: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = None  # for role == "tool": which call this answers
    name: str | None = None  # for role == "tool": the tool's name


@dataclass(frozen=True)
class Completion:
    message: Message  # role == "assistant"
    input_tokens: int
    output_tokens: int
    latency_s: float
    stop_reason: str = ""
    raw: dict[str, Any] = field(default_factory=dict)


class BackendError(Exception):
    """A backend call failed."""


class TransientBackendError(BackendError):
    """Rate limits, 5xx, timeouts, connection errors: worth retrying later."""


class PermanentBackendError(BackendError):
    """Bad credentials, bad request, unknown model: retrying will not help."""


class Backend(Protocol):
    name: str  # "openai", "anthropic", "heuristic", "scripted"
    model: str

    def complete(
        self,
        messages: Sequence[Message],
        tools: Sequence[ToolSpec],
        *,
        max_output_tokens: int,
        temperature: float,
        seed: int | None,
    ) -> Completion: ...
