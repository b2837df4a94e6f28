"""Anthropic Messages API with tool use, prompt caching and (optionally) extended thinking.

- Caching: `cache_control` breakpoints on the last tool, on the system prompt and on the last
  block of the conversation, so each request reads everything the previous one wrote.
- Failed tool results carry `is_error: true`.
- `tool_choice`: auto, `any` (the loop's "required") or one named tool. With extended thinking
  the API accepts only auto, so a forced choice is sent as auto (the loop's final phase then
  relies on its note and refusals).
- Extended thinking (`thinking_budget` tokens): no temperature (the API refuses one), and the
  thinking blocks, signatures included, are sent back verbatim with their assistant turn, as
  the API requires during tool use.
- Streaming with an idle timeout; `overloaded_error` (HTTP 529 or an error event mid-stream)
  is retried like a 429.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

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

API_VERSION = "2023-06-01"
# 529 is Anthropic's "overloaded".
ANTHROPIC_RETRYABLE = RETRYABLE_STATUSES | {529}
EPHEMERAL = {"type": "ephemeral"}
MIN_THINKING_BUDGET = 1024  # the API's minimum


class AnthropicBackend(HttpBackend):
    name = "anthropic"

    def __init__(
        self,
        base_url: str = "https://api.anthropic.com",
        api_key: str = "",
        model: str = "",
        *,
        thinking_budget: int = 0,
        cache: bool = True,
        **options: Any,
    ) -> None:
        super().__init__(base_url, api_key, model, **options)
        self.thinking_budget = thinking_budget
        self.cache = cache

    def _headers(self) -> dict[str, str]:
        return {"x-api-key": self.api_key, "anthropic-version": API_VERSION}

    def complete(
        self,
        messages: Sequence[Message],
        tools: Sequence[ToolSpec],
        *,
        max_output_tokens: int,
        temperature: float,
        seed: int | None,  # the Messages API has no seed; accepted for the common interface
        options: CallOptions = CallOptions(),  # noqa: B008 (frozen, never mutated)
    ) -> Completion:
        body = build_request(
            self.model, messages, tools, max_output_tokens, temperature,
            tool_choice=options.tool_choice, thinking_budget=self.thinking_budget,
            cache=self.cache, stream=self.stream,
        )  # fmt: skip
        estimate = self._estimate(messages, tools)
        started = time.monotonic()
        acc, abandoned = stream_post(
            self._client,
            f"{self.base_url}/v1/messages",
            headers=self._headers(),
            body=body,
            new_accumulator=_Events,
            policy=self.policy,
            idle_timeout_s=self.idle_timeout_s,
            retry_statuses=ANTHROPIC_RETRYABLE,
            input_estimate=estimate,
            sleep=self._sleep,
        )
        assert isinstance(acc, _Events)
        completion = parse_response(acc.payload(), latency_s=time.monotonic() - started)
        return replace(completion, abandoned=tuple(abandoned)) if abandoned else completion

    def limits(self) -> ModelLimits:
        """The Models API states the model's input window and output limit."""
        info = self._get(f"/v1/models/{self.model}", self._headers()) or {}
        window, out = info.get("max_input_tokens"), info.get("max_tokens")
        if isinstance(window, int) or isinstance(out, int):
            return ModelLimits(
                window if isinstance(window, int) else None,
                out if isinstance(out, int) else None,
                "GET /v1/models/{model} max_input_tokens",
            )
        return ModelLimits()


def build_request(
    model: str,
    messages: Sequence[Message],
    tools: Sequence[ToolSpec],
    max_output_tokens: int,
    temperature: float,
    *,
    tool_choice: str = "auto",
    thinking_budget: int = 0,
    cache: bool = False,
    stream: bool = False,
) -> dict[str, Any]:
    system = "\n\n".join(m.content for m in messages if m.role == "system" and m.content)
    body: dict[str, Any] = {"model": model, "max_tokens": max_output_tokens}
    budget = min(thinking_budget, max_output_tokens - MIN_THINKING_BUDGET)
    thinking = thinking_budget > 0 and budget >= MIN_THINKING_BUDGET
    if thinking:
        body["thinking"] = {"type": "enabled", "budget_tokens": budget}
    else:
        body["temperature"] = temperature
    turns = _turns(messages)
    if cache and turns and turns[-1]["content"]:
        last = turns[-1]["content"][-1]
        turns[-1]["content"][-1] = {**last, "cache_control": EPHEMERAL}
    body["messages"] = turns
    if system:
        body["system"] = (
            [{"type": "text", "text": system, "cache_control": EPHEMERAL}] if cache else system
        )
    if tools:
        wire = [
            {"name": t.name, "description": t.description, "input_schema": t.parameters}
            for t in tools
        ]
        if cache:
            wire[-1] = {**wire[-1], "cache_control": EPHEMERAL}
        body["tools"] = wire
        if tool_choice == "required" and not thinking:
            body["tool_choice"] = {"type": "any"}
        elif tool_choice not in ("auto", "required") and not thinking:
            body["tool_choice"] = {"type": "tool", "name": tool_choice}
    if stream:
        body["stream"] = True
    return body


def _turns(messages: Sequence[Message]) -> list[dict[str, Any]]:
    """Our flat message list as alternating user/assistant turns of content blocks.

    Tool results travel as `tool_result` blocks in a user turn, and adjacent turns of one role are
    merged, so several results (and any user note after them) form a single user message.
    """
    turns: list[dict[str, Any]] = []
    for message in messages:
        if message.role == "system":
            continue
        role = "assistant" if message.role == "assistant" else "user"
        blocks = _blocks(message)
        if not blocks:
            continue
        if turns and turns[-1]["role"] == role:
            turns[-1]["content"].extend(blocks)
        else:
            turns.append({"role": role, "content": blocks})
    return turns


def _blocks(message: Message) -> list[dict[str, Any]]:
    if message.role == "tool":
        block: dict[str, Any] = {
            "type": "tool_result",
            "tool_use_id": message.tool_call_id,
            "content": message.content,
        }
        if message.is_error:
            block["is_error"] = True
        return [block]
    # Thinking first, verbatim: the API checks the signatures.
    blocks: list[dict[str, Any]] = [dict(b) for b in message.thinking_blocks]
    # The API rejects empty text blocks.
    if message.content:
        blocks.append({"type": "text", "text": message.content})
    for call in message.tool_calls:
        blocks.append({"type": "tool_use", "id": call.id, "name": call.name, "input": _input(call)})
    return blocks


def _input(call: ToolCall) -> dict[str, Any]:
    if call.arguments is not None:
        return call.arguments
    # `input` must be an object; a malformed call is replayed as empty (its error went back
    # to the model in the tool result).
    try:
        decoded = json.loads(call.raw_arguments)
    except ValueError:
        return {}
    return decoded if isinstance(decoded, dict) else {}


@dataclass
class _Events:
    """Messages-API stream events merged into one message object."""

    message: dict[str, Any] = field(default_factory=dict)
    blocks: dict[int, dict[str, Any]] = field(default_factory=dict)
    partial_json: dict[int, list[str]] = field(default_factory=dict)
    _whole: dict[str, Any] | None = None

    def whole(self, payload: Mapping[str, Any]) -> None:
        self._whole = dict(payload)

    def feed(self, event: str, data: Mapping[str, Any]) -> None:
        kind = data.get("type", event)
        if kind == "error":
            err = data.get("error") or {}
            retryable = err.get("type") in ("overloaded_error", "api_error", "rate_limit_error")
            raise StreamError(f"{err.get('type')}: {err.get('message')}", retryable=retryable)
        if kind == "message_start":
            self.message = dict(data.get("message") or {})
        elif kind == "content_block_start":
            self.blocks[int(data["index"])] = dict(data.get("content_block") or {})
        elif kind == "content_block_delta":
            i, delta = int(data["index"]), data.get("delta") or {}
            block = self.blocks.setdefault(i, {"type": "text", "text": ""})
            dtype = delta.get("type")
            if dtype == "text_delta":
                block["text"] = block.get("text", "") + str(delta.get("text", ""))
            elif dtype == "input_json_delta":
                self.partial_json.setdefault(i, []).append(str(delta.get("partial_json", "")))
            elif dtype == "thinking_delta":
                block["thinking"] = block.get("thinking", "") + str(delta.get("thinking", ""))
            elif dtype == "signature_delta":
                block["signature"] = block.get("signature", "") + str(delta.get("signature", ""))
        elif kind == "message_delta":
            delta = data.get("delta") or {}
            self.message.update({k: v for k, v in delta.items() if v is not None})
            usage = dict(self.message.get("usage") or {})
            usage.update(data.get("usage") or {})
            self.message["usage"] = usage

    def streamed_text(self) -> str:
        texts = [str(b.get("text", "")) + str(b.get("thinking", "")) for b in self.blocks.values()]
        return "".join(texts) + "".join("".join(p) for p in self.partial_json.values())

    def payload(self) -> dict[str, Any]:
        if self._whole is not None:
            return self._whole
        content = []
        for i, block in sorted(self.blocks.items()):
            if block.get("type") == "tool_use" and i in self.partial_json:
                block = {**block, "input": "".join(self.partial_json[i])}
            content.append(block)
        return {**self.message, "content": content}


def parse_response(payload: Mapping[str, Any], *, latency_s: float) -> Completion:
    content = payload.get("content")
    if not isinstance(content, list):
        raise TransientBackendError(f"response has no content: {str(payload)[:200]}")
    texts: list[str] = []
    calls: list[ToolCall] = []
    thinking: list[dict[str, Any]] = []
    for block in content:
        if block.get("type") == "text":
            texts.append(str(block.get("text", "")))
        elif block.get("type") in ("thinking", "redacted_thinking"):
            thinking.append(dict(block))
        elif block.get("type") == "tool_use":
            raw_input = block.get("input", {})
            if raw_input == "":  # a streamed tool use whose input never arrived
                raw_input = "{}"
            arguments, raw_text, error = parse_tool_arguments(raw_input)
            calls.append(
                ToolCall(
                    id=str(block.get("id") or f"toolu_{len(calls)}"),
                    name=str(block.get("name", "")),
                    arguments=arguments,
                    raw_arguments=raw_text,
                    error=error,
                )
            )
    usage = payload.get("usage") or {}
    cached = int(usage.get("cache_read_input_tokens") or 0)
    # Cached prompt tokens are still input the budget must count.
    input_tokens = sum(
        int(usage.get(key) or 0)
        for key in ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")
    )
    stop = str(payload.get("stop_reason") or "")
    return Completion(
        message=Message(
            role="assistant",
            content="".join(texts),
            tool_calls=tuple(calls),
            reasoning="".join(str(b.get("thinking", "")) for b in thinking),
            thinking_blocks=tuple(thinking),
        ),
        input_tokens=input_tokens,
        output_tokens=int(usage.get("output_tokens") or 0),
        latency_s=latency_s,
        stop_reason=stop,
        raw=dict(payload),
        truncated=stop == "max_tokens",
        cached_input_tokens=cached,
    )
