"""OpenAI-compatible chat completions with tool calling (OpenAI, vLLM, SGLang, local servers).

Per configuration (`reasoning`): reasoning models get `max_completion_tokens` and no
`temperature` (OpenAI's reasoning models reject both `max_tokens` and a temperature other than
the default) and may get `reasoning_effort`. So does every model on api.openai.com, which
deprecated `max_tokens`; other servers get `max_tokens`, which every compatible server accepts
(`limit_parameter` names another). Answers are streamed with
`stream_options.include_usage`; a server that reports no usage gets our tokenizer's estimate,
flagged. vLLM/SGLang reasoning (`reasoning`, formerly `reasoning_content`) is kept in the
transcript but not sent back: chat templates drop it, and some servers refuse it as input.
"""

from __future__ import annotations

import json
import secrets
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from grading.grader import tokens
from grading.grader.backends.base import (
    CallOptions,
    Completion,
    Message,
    ModelLimits,
    ToolCall,
    ToolSpec,
    TransientBackendError,
)
from grading.grader.backends.streaming import StreamError, stream_post
from grading.grader.backends.transport import (
    RETRYABLE_STATUSES,
    HttpBackend,
    parse_tool_arguments,
)

# Fields servers use to say how long a context their model takes (vLLM and SGLang:
# max_model_len; OpenRouter-style and llama.cpp-style servers: the others).
_WINDOW_FIELDS = ("max_model_len", "context_length", "context_window", "max_context_length")


class OpenAICompatBackend(HttpBackend):
    name = "openai"

    def __init__(
        self,
        base_url: str,
        api_key: str,
        model: str,
        *,
        reasoning: bool = False,
        reasoning_effort: str = "",
        limit_parameter: str = "",
        **options: Any,
    ) -> None:
        super().__init__(base_url, api_key, model, **options)
        self.reasoning = reasoning
        self.reasoning_effort = reasoning_effort
        # OpenAI itself deprecated max_tokens, and its newer models refuse it.
        official = "api.openai.com" in self.base_url
        self.limit_parameter = limit_parameter or (
            "max_completion_tokens" if reasoning or official else "max_tokens"
        )
        self._ids: set[str] = set()

    def _headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}

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
        body = build_request(
            self.model, messages, tools, max_output_tokens, temperature, seed,
            reasoning=self.reasoning, reasoning_effort=self.reasoning_effort,
            limit_parameter=self.limit_parameter, tool_choice=options.tool_choice,
            stream=self.stream,
        )  # fmt: skip
        estimate = self._estimate(messages, tools)
        started = time.monotonic()
        acc, abandoned = stream_post(
            self._client,
            f"{self.base_url}/chat/completions",
            headers=self._headers(),
            body=body,
            new_accumulator=_Chunks,
            policy=self.policy,
            idle_timeout_s=self.idle_timeout_s,
            retry_statuses=RETRYABLE_STATUSES,
            input_estimate=estimate,
            sleep=self._sleep,
        )
        assert isinstance(acc, _Chunks)
        completion = parse_response(
            acc.payload(),
            latency_s=time.monotonic() - started,
            input_estimate=estimate,
            seen_ids=self._ids,
        )
        return replace(completion, abandoned=tuple(abandoned)) if abandoned else completion

    def limits(self) -> ModelLimits:
        """What `/models` says about the served model (vLLM and SGLang say its window)."""
        listing = self._get("/models", self._headers()) or {}
        for card in listing.get("data") or []:
            if isinstance(card, dict) and card.get("id") == self.model:
                for key in _WINDOW_FIELDS:
                    if isinstance(card.get(key), int):
                        return ModelLimits(card[key], None, f"GET /models {key}")
        return ModelLimits()


def build_request(
    model: str,
    messages: Sequence[Message],
    tools: Sequence[ToolSpec],
    max_output_tokens: int,
    temperature: float,
    seed: int | None,
    *,
    reasoning: bool = False,
    reasoning_effort: str = "",
    limit_parameter: str = "max_tokens",
    tool_choice: str = "auto",
    stream: bool = False,
) -> dict[str, Any]:
    body: dict[str, Any] = {
        "model": model,
        "messages": [_message_to_wire(m) for m in messages],
        limit_parameter: max_output_tokens,
    }
    if not reasoning:
        body["temperature"] = temperature
    elif reasoning_effort:
        body["reasoning_effort"] = reasoning_effort
    if seed is not None:
        body["seed"] = seed
    if tools:
        body["tools"] = [
            {
                "type": "function",
                "function": {
                    "name": t.name,
                    "description": t.description,
                    "parameters": t.parameters,
                },
            }
            for t in tools
        ]
        if tool_choice == "required":
            body["tool_choice"] = "required"
        elif tool_choice != "auto":
            body["tool_choice"] = {"type": "function", "function": {"name": tool_choice}}
    if stream:
        body["stream"] = True
        body["stream_options"] = {"include_usage": True}
    return body


def _message_to_wire(message: Message) -> dict[str, Any]:
    if message.role == "tool":
        return {"role": "tool", "tool_call_id": message.tool_call_id, "content": message.content}
    wire: dict[str, Any] = {"role": message.role, "content": message.content}
    if message.role == "assistant" and message.tool_calls:
        # The API wants null content beside tool calls rather than an empty string.
        wire["content"] = message.content or None
        wire["tool_calls"] = [
            {
                "id": call.id,
                "type": "function",
                "function": {"name": call.name, "arguments": _arguments_text(call)},
            }
            for call in message.tool_calls
        ]
    return wire


def _arguments_text(call: ToolCall) -> str:
    # Echo malformed arguments back verbatim so the model sees what it actually sent.
    return call.raw_arguments if call.arguments is None else json.dumps(call.arguments)


@dataclass
class _Chunks:
    """Streamed `chat.completion.chunk`s merged into one `chat.completion`."""

    content: list[str] = field(default_factory=list)
    reasoning: list[str] = field(default_factory=list)
    calls: dict[int, dict[str, Any]] = field(default_factory=dict)
    finish_reason: str | None = None
    usage: dict[str, Any] | None = None
    _whole: dict[str, Any] | None = None

    def whole(self, payload: Mapping[str, Any]) -> None:
        self._whole = dict(payload)

    def feed(self, event: str, data: Mapping[str, Any]) -> None:
        if isinstance(data.get("error"), dict):
            raise StreamError(str(data["error"].get("message", data["error"])), retryable=True)
        if isinstance(data.get("usage"), dict):
            self.usage = dict(data["usage"])
        for choice in data.get("choices") or []:
            delta = choice.get("delta") or {}
            if delta.get("content"):
                self.content.append(str(delta["content"]))
            thought = delta.get("reasoning") or delta.get("reasoning_content")
            if thought:
                self.reasoning.append(str(thought))
            for tc in delta.get("tool_calls") or []:
                slot = self.calls.setdefault(
                    int(tc.get("index", len(self.calls))), {"id": "", "name": "", "args": []}
                )
                slot["id"] = tc.get("id") or slot["id"]
                fn = tc.get("function") or {}
                slot["name"] = fn.get("name") or slot["name"]
                if fn.get("arguments"):
                    slot["args"].append(str(fn["arguments"]))
            if choice.get("finish_reason"):
                self.finish_reason = str(choice["finish_reason"])

    def streamed_text(self) -> str:
        return (
            "".join(self.content)
            + "".join(self.reasoning)
            + "".join("".join(c["args"]) for c in self.calls.values())
        )

    def payload(self) -> dict[str, Any]:
        if self._whole is not None:
            return self._whole
        message: dict[str, Any] = {"role": "assistant", "content": "".join(self.content) or None}
        if self.reasoning:
            message["reasoning"] = "".join(self.reasoning)
        if self.calls:
            message["tool_calls"] = [
                {
                    "id": c["id"],
                    "type": "function",
                    "function": {"name": c["name"], "arguments": "".join(c["args"])},
                }
                for _, c in sorted(self.calls.items())
            ]
        out: dict[str, Any] = {
            "choices": [{"index": 0, "message": message, "finish_reason": self.finish_reason}]
        }
        if self.usage is not None:
            out["usage"] = self.usage
        return out


def _unique_id(raw: object, seen: set[str]) -> str:
    """The server's id, or a fresh one when it sent none or repeated one from an earlier turn."""
    ident = str(raw or "")
    if not ident or ident in seen:
        ident = f"call_{secrets.token_hex(8)}"
    seen.add(ident)
    return ident


def parse_response(
    payload: Mapping[str, Any],
    *,
    latency_s: float,
    input_estimate: int | None = None,
    seen_ids: set[str] | None = None,
) -> Completion:
    choices = payload.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        raise TransientBackendError(f"response has no choices: {str(payload)[:200]}")
    choice = choices[0]
    wire = choice.get("message") or {}
    seen = seen_ids if seen_ids is not None else set()
    calls = []
    for raw_call in wire.get("tool_calls") or []:
        function = raw_call.get("function") or {}
        arguments, raw_text, error = parse_tool_arguments(function.get("arguments", ""))
        calls.append(
            ToolCall(
                id=_unique_id(raw_call.get("id"), seen),
                name=str(function.get("name", "")),
                arguments=arguments,
                raw_arguments=raw_text,
                error=error,
            )
        )
    reasoning = str(wire.get("reasoning") or wire.get("reasoning_content") or "")
    message = Message(
        role="assistant",
        content=wire.get("content") or "",
        tool_calls=tuple(calls),
        reasoning=reasoning,
    )
    finish = str(choice.get("finish_reason") or "")
    usage = payload.get("usage")
    estimated = not isinstance(usage, dict) or "prompt_tokens" not in usage
    if estimated:
        prompt = input_estimate or 0
        completion_tokens = tokens.count(message.content + reasoning) + sum(
            tokens.count(c.raw_arguments) + tokens.count(c.name) for c in calls
        )
        cached = reasoning_tokens = 0
    else:
        assert isinstance(usage, dict)
        prompt = int(usage.get("prompt_tokens") or 0)
        completion_tokens = int(usage.get("completion_tokens") or 0)
        details = usage.get("prompt_tokens_details") or {}
        cached = int(details.get("cached_tokens") or usage.get("prompt_cache_hit_tokens") or 0)
        out_details = usage.get("completion_tokens_details") or {}
        reasoning_tokens = int(out_details.get("reasoning_tokens") or 0)
    return Completion(
        message=message,
        input_tokens=prompt,
        output_tokens=completion_tokens,
        latency_s=latency_s,
        stop_reason=finish,
        raw=dict(payload),
        truncated=finish == "length",
        cached_input_tokens=cached,
        reasoning_tokens=reasoning_tokens,
        usage_estimated=estimated,
    )
