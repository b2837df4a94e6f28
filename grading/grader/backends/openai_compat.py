"""OpenAI-compatible chat completions with tool calling (OpenAI, vLLM, SGLang, local servers)."""

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
from grading.grader.backends.transport import HttpBackend, parse_tool_arguments


class OpenAICompatBackend(HttpBackend):
    name = "openai"

    def complete(
        self,
        messages: Sequence[Message],
        tools: Sequence[ToolSpec],
        *,
        max_output_tokens: int,
        temperature: float,
        seed: int | None,
    ) -> Completion:
        body = build_request(self.model, messages, tools, max_output_tokens, temperature, seed)
        headers = {"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}
        payload, latency_s = self._post("/chat/completions", headers, body)
        return parse_response(payload, latency_s=latency_s)


def build_request(
    model: str,
    messages: Sequence[Message],
    tools: Sequence[ToolSpec],
    max_output_tokens: int,
    temperature: float,
    seed: int | None,
) -> dict[str, Any]:
    body: dict[str, Any] = {
        "model": model,
        "messages": [_message_to_wire(m) for m in messages],
        # `max_tokens` rather than `max_completion_tokens`: every compatible server accepts it.
        "max_tokens": max_output_tokens,
        "temperature": temperature,
    }
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


def parse_response(payload: dict[str, Any], *, latency_s: float) -> Completion:
    choices = payload.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        raise TransientBackendError(f"response has no choices: {str(payload)[:200]}")
    choice = choices[0]
    wire = choice.get("message") or {}
    calls = []
    for index, raw_call in enumerate(wire.get("tool_calls") or []):
        function = raw_call.get("function") or {}
        arguments, raw_text, error = parse_tool_arguments(function.get("arguments", ""))
        calls.append(
            ToolCall(
                id=str(raw_call.get("id") or f"call_{index}"),
                name=str(function.get("name", "")),
                arguments=arguments,
                raw_arguments=raw_text,
                error=error,
            )
        )
    usage = payload.get("usage") or {}
    return Completion(
        message=Message(
            role="assistant", content=wire.get("content") or "", tool_calls=tuple(calls)
        ),
        input_tokens=int(usage.get("prompt_tokens") or 0),
        output_tokens=int(usage.get("completion_tokens") or 0),
        latency_s=latency_s,
        stop_reason=str(choice.get("finish_reason") or ""),
        raw=payload,
    )
