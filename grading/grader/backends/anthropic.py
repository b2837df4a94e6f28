"""Anthropic Messages API with tool use."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from grading.grader.backends.base import (
    Completion,
    Message,
    ToolCall,
    ToolSpec,
    TransientBackendError,
)
from grading.grader.backends.transport import (
    RETRYABLE_STATUSES,
    HttpBackend,
    parse_tool_arguments,
)

API_VERSION = "2023-06-01"
# 529 is Anthropic's "overloaded".
ANTHROPIC_RETRYABLE = RETRYABLE_STATUSES | {529}


class AnthropicBackend(HttpBackend):
    name = "anthropic"

    def __init__(
        self,
        base_url: str = "https://api.anthropic.com",
        api_key: str = "",
        model: str = "",
        **options: Any,
    ) -> None:
        super().__init__(base_url, api_key, model, **options)

    def complete(
        self,
        messages: Sequence[Message],
        tools: Sequence[ToolSpec],
        *,
        max_output_tokens: int,
        temperature: float,
        seed: int | None,  # the Messages API has no seed; accepted for the common interface
    ) -> Completion:
        body = build_request(self.model, messages, tools, max_output_tokens, temperature)
        headers = {"x-api-key": self.api_key, "anthropic-version": API_VERSION}
        payload, latency_s = self._post("/v1/messages", headers, body, ANTHROPIC_RETRYABLE)
        return parse_response(payload, latency_s=latency_s)


def build_request(
    model: str,
    messages: Sequence[Message],
    tools: Sequence[ToolSpec],
    max_output_tokens: int,
    temperature: float,
) -> dict[str, Any]:
    system = "\n\n".join(m.content for m in messages if m.role == "system" and m.content)
    body: dict[str, Any] = {
        "model": model,
        "max_tokens": max_output_tokens,
        "temperature": temperature,
        "messages": _turns(messages),
    }
    if system:
        body["system"] = system
    if tools:
        body["tools"] = [
            {"name": t.name, "description": t.description, "input_schema": t.parameters}
            for t in tools
        ]
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
        return [
            {
                "type": "tool_result",
                "tool_use_id": message.tool_call_id,
                "content": message.content,
            }
        ]
    # The API rejects empty text blocks.
    blocks: list[dict[str, Any]] = (
        [{"type": "text", "text": message.content}] if message.content else []
    )
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


def parse_response(payload: dict[str, Any], *, latency_s: float) -> Completion:
    content = payload.get("content")
    if not isinstance(content, list):
        raise TransientBackendError(f"response has no content: {str(payload)[:200]}")
    texts: list[str] = []
    calls: list[ToolCall] = []
    for block in content:
        if block.get("type") == "text":
            texts.append(str(block.get("text", "")))
        elif block.get("type") == "tool_use":
            arguments, raw_text, error = parse_tool_arguments(block.get("input", {}))
            calls.append(
                ToolCall(
                    id=str(block.get("id", f"toolu_{len(calls)}")),
                    name=str(block.get("name", "")),
                    arguments=arguments,
                    raw_arguments=raw_text,
                    error=error,
                )
            )
    usage = payload.get("usage") or {}
    # Cached prompt tokens are still input the budget must count.
    input_tokens = sum(
        int(usage.get(key) or 0)
        for key in ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")
    )
    return Completion(
        message=Message(role="assistant", content="".join(texts), tool_calls=tuple(calls)),
        input_tokens=input_tokens,
        output_tokens=int(usage.get("output_tokens") or 0),
        latency_s=latency_s,
        stop_reason=str(payload.get("stop_reason") or ""),
        raw=payload,
    )
