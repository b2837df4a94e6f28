"""The one small interface every grader backend implements.

A backend turns a conversation plus tool specs into the next assistant message. It knows nothing
about groups, verdicts or Django; the agent loop (`grading.grader.loop`) drives it and documents
the protocol a backend's replies must follow.
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
    is_error: bool = False  # for role == "tool": the call failed (Anthropic's `is_error`)
    # The model's reasoning (vLLM/SGLang `reasoning`/`reasoning_content`, Anthropic thinking),
    # kept in the transcript. Anthropic thinking blocks (with their signatures) travel in
    # `thinking_blocks`, because the API wants them back verbatim during tool use.
    reasoning: str = ""
    thinking_blocks: tuple[dict[str, Any], ...] = ()


@dataclass(frozen=True)
class CallOptions:
    """How one request should be made, beyond the conversation itself.

    `tool_choice`: "auto", "required" (any of the offered tools) or a tool name to force.
    `cache_prefix`: how many leading messages the loop will send unchanged next time (where a
    provider that caches explicitly, Anthropic, should put its breakpoint).
    `max_tool_calls`: the loop runs at most this many exploration calls per turn; deterministic
    backends should not ask for more.
    """

    tool_choice: str = "auto"
    cache_prefix: int = 0
    max_tool_calls: int | None = None


@dataclass(frozen=True)
class Delivery:
    """Tokens of one HTTP delivery, recorded whether or not its answer was used."""

    attempt: int
    status: str  # "ok", "http 529", "timeout", "idle timeout", "stream error", …
    input_tokens: int = 0
    output_tokens: int = 0
    estimated: bool = False


@dataclass(frozen=True)
class Completion:
    message: Message  # role == "assistant"
    input_tokens: int  # every prompt token, cached ones included
    output_tokens: int  # reasoning tokens included
    latency_s: float
    stop_reason: str = ""
    raw: dict[str, Any] = field(default_factory=dict)
    # The reply hit its output limit (`finish_reason: "length"`, `stop_reason: "max_tokens"`):
    # a tool call in it may be cut short.
    truncated: bool = False
    cached_input_tokens: int = 0  # of input_tokens, read from the provider's prompt cache
    reasoning_tokens: int = 0  # of output_tokens
    # The server reported no usage: the counts above come from our own tokenizer.
    usage_estimated: bool = False
    # HTTP deliveries of this call that were given up (retried) before this answer came.
    abandoned: tuple[Delivery, ...] = ()


@dataclass(frozen=True)
class ModelLimits:
    """What a server says about the model it serves (None where it says nothing)."""

    context_window: int | None = None
    max_output_tokens: int | None = None
    source: str = ""  # where the figures came from, e.g. "GET /v1/models max_model_len"


class BackendError(Exception):
    """A backend call failed. `deliveries` holds the tokens its failed attempts spent."""

    deliveries: tuple[Delivery, ...] = ()


class TransientBackendError(BackendError):
    """Rate limits, 5xx, timeouts, connection errors: worth retrying later."""


class PermanentBackendError(BackendError):
    """Bad credentials, bad request, unknown model: retrying will not help."""


class ContextOverflowError(PermanentBackendError):
    """The server refused the request because it does not fit the model's context window.

    Not final for the loop: it compacts the conversation to the limit the server named and asks
    again. `limit` is the window the server stated and `prompt_tokens` its count of our prompt,
    when its message says (the loop learns the server's tokenizer from it).
    """

    def __init__(
        self, message: str, limit: int | None = None, prompt_tokens: int | None = None
    ) -> None:
        super().__init__(message)
        self.limit = limit
        self.prompt_tokens = prompt_tokens


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
        options: CallOptions = ...,
    ) -> Completion: ...
