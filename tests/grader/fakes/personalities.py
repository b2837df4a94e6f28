"""Fake provider servers that behave like the real ones, behind `FakeLLMServer(handler=…)`.

- `OpenAIReasoning`: refuses `max_tokens` and `temperature`, streams chat-completion chunks with
  hidden reasoning tokens and usage (cached tokens for the repeated prefix), `finish_reason:
  "length"` when the reply hits `max_completion_tokens`.
- `VLLM`: streams `reasoning_content`, reports no usage, repeats `call_0`-style ids across
  turns, sends non-JSON arguments now and then, says `max_model_len` on `/v1/models` and refuses
  prompt + max_tokens beyond it as vLLM does.
- `Anthropic`: thinking blocks with signatures that must come back during tool use, `stop_reason:
  "max_tokens"`, HTTP 529 and an `overloaded_error` in mid-stream, cache reads and writes at the
  request's `cache_control` breakpoints, the Models API's `max_input_tokens`.

Each keeps its own token counts of every request (`records`), so tests check the grader's
accounting against the server's. The replies come from a `ScriptedAgent`.
"""

from __future__ import annotations

import functools
import hashlib
import json
from dataclasses import dataclass, field
from typing import Any

from grading.grader import tokens
from tests.grader.fakes.agent import Neutral, ScriptedAgent, Turn
from tests.grader.fakes.llm_server import FakeResponse, RecordedRequest, error_body

# A server counts every request's whole prompt, which repeats the conversation so far: count
# each text once (the throughput benchmark sends thousands of such requests at once).
_count = functools.lru_cache(maxsize=1 << 15)(tokens.count)


@functools.cache
def _encoding() -> Any:
    import tiktoken

    return tiktoken.get_encoding(tokens.ENCODING)


def _head(text: str, n: int) -> str:
    """The first n tokens of text."""
    return str(_encoding().decode(_encoding().encode_ordinary(text)[: max(n, 0)]))


@dataclass
class Record:
    path: str
    status: str  # "ok", "http 400", "http 529", "stream error"
    prompt: int = 0
    cached: int = 0
    output: int = 0
    reasoning: int = 0
    cut: bool = False


@dataclass
class Provider:
    agent: ScriptedAgent
    context_limit: int = 128_000
    output_limit: int = 32_000
    model: str = "fake-model"
    records: list[Record] = field(default_factory=list)
    _previous: list[str] = field(default_factory=list)  # message renderings of the last request

    # -- counting, as a server's own tokenizer would --------------------------------------------

    def _prefix_tokens(self, rendered: list[str]) -> int:
        n = 0
        for a, b in zip(self._previous, rendered, strict=False):
            if a != b:
                break
            n += _count(b) + 4
        return n

    def _cut(self, turn: Turn, limit: int, reasoning: int) -> tuple[Turn, int, bool]:
        """The reply as the model emits it within `limit` output tokens."""
        budget = limit - reasoning - _count(turn.text)
        calls: list[tuple[str, str]] = []
        for name, args in turn.calls:
            cost = _count(name) + _count(args) + 3
            if cost <= budget:
                calls.append((name, args))
                budget -= cost
                continue
            calls.append((name, _head(args, budget - _count(name) - 3)))
            return Turn(turn.text, calls), limit, True
        return turn, limit - budget, False

    @staticmethod
    def sse(event: str, data: dict[str, Any]) -> tuple[str, str]:
        return event, json.dumps(data)


# -- OpenAI chat completions ----------------------------------------------------------------


def _openai_neutral(body: dict[str, Any]) -> list[Neutral]:
    out = []
    for m in body.get("messages", []):
        calls = [
            (c["id"], c["function"]["name"], c["function"]["arguments"])
            for c in m.get("tool_calls") or []
        ]
        out.append(Neutral(m["role"], m.get("content") or "", calls, m.get("tool_call_id") or ""))
    return out


def _openai_render(body: dict[str, Any]) -> list[str]:
    return [json.dumps(body.get("tools", []))] + [
        json.dumps(m, sort_keys=True) for m in body.get("messages", [])
    ]


def _openai_prompt(body: dict[str, Any]) -> int:
    n = _count(json.dumps(body.get("tools", [])))
    for m in body.get("messages", []):
        n += 4 + _count(m["role"]) + _count(m.get("content") or "")
        for c in m.get("tool_calls") or []:
            n += 4 + _count(c["function"]["name"]) + _count(c["function"]["arguments"])
    return n


@dataclass
class OpenAIChat(Provider):
    reasoning_tokens: int = 0  # hidden reasoning per reply (OpenAI reasoning models)
    reasoning_text: str = ""  # streamed reasoning (vLLM)
    report_usage: bool = True
    reasoning_field: str = "reasoning_content"
    check_request_total: bool = False  # vLLM: prompt + max_tokens must fit
    reasoning_model: bool = False
    repeat_ids: bool = False
    break_every: int = 0  # every n-th call's arguments are not JSON
    _calls_sent: int = 0

    def __call__(self, request: RecordedRequest) -> FakeResponse:
        if request.method == "GET":
            card = {"id": self.model, "object": "model", "max_model_len": self.context_limit}
            return FakeResponse(body={"object": "list", "data": [card]})
        body = request.body
        if self.reasoning_model and "max_tokens" in body:
            return self._refuse(
                "Unsupported parameter: 'max_tokens' is not supported with this model. "
                "Use 'max_completion_tokens' instead."
            )
        if self.reasoning_model and "temperature" in body:
            return self._refuse(
                f"Unsupported value: 'temperature' does not support {body['temperature']} with "
                "this model. Only the default (1) value is supported."
            )
        limit = int(body.get("max_completion_tokens") or body.get("max_tokens") or 4096)
        prompt = _openai_prompt(body)
        too_long = (
            prompt + limit > self.context_limit
            if self.check_request_total
            else (prompt > self.context_limit)
        )
        if too_long:
            msg = (
                f"This model's maximum context length is {self.context_limit} tokens. However, "
                f"you requested {prompt + limit} tokens ({prompt} in the messages, {limit} in "
                "the completion). Please reduce the length of the messages or completion."
            )
            self.records.append(Record(request.path, "http 400", prompt))
            return FakeResponse(400, {"error": {"message": msg, "code": "context_length_exceeded"}})
        rendered = _openai_render(body)
        prefix = self._prefix_tokens(rendered)
        self._previous = rendered
        cached = min((prefix // 128) * 128 if prefix >= 1024 else 0, prompt)
        turn = self.agent.next_turn(_openai_neutral(body))
        hidden = self.reasoning_tokens + _count(self.reasoning_text)
        turn, used, cut = self._cut(turn, min(limit, self.output_limit), hidden)
        self.records.append(
            Record(request.path, "ok", prompt, cached, used, self.reasoning_tokens, cut)
        )
        return FakeResponse(events=self._stream(turn, cut, prompt, cached, used))

    def _refuse(self, message: str) -> FakeResponse:
        self.records.append(Record("/v1/chat/completions", "http 400"))
        return FakeResponse(400, {"error": {"message": message, "type": "invalid_request_error"}})

    def _stream(
        self, turn: Turn, cut: bool, prompt: int, cached: int, used: int
    ) -> tuple[tuple[str, str], ...]:
        def chunk(delta: dict[str, Any], finish: str | None = None) -> tuple[str, str]:
            return self.sse(
                "",
                {
                    "id": "chatcmpl-x",
                    "object": "chat.completion.chunk",
                    "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
                },
            )

        events = [chunk({"role": "assistant", "content": ""})]
        if self.reasoning_text:
            events.append(chunk({self.reasoning_field: self.reasoning_text}))
        if turn.text:
            events.append(chunk({"content": turn.text}))
        for i, (name, args) in enumerate(turn.calls):
            self._calls_sent += 1
            if self.break_every and self._calls_sent % self.break_every == 0 and not cut:
                args = args.replace('"', "'")  # a Python dict, as weak tool parsers emit
            ident = f"call_{i}" if self.repeat_ids else f"call_{self._calls_sent:05d}"
            head = {"index": i, "id": ident, "type": "function", "function": {"name": name}}
            events.append(
                chunk({"tool_calls": [{**head, "function": {"name": name, "arguments": ""}}]})
            )
            half = len(args) // 2
            for part in (args[:half], args[half:]):
                events.append(
                    chunk({"tool_calls": [{"index": i, "function": {"arguments": part}}]})
                )
        finish = "length" if cut else ("tool_calls" if turn.calls else "stop")
        events.append(chunk({}, finish))
        if self.report_usage:
            usage = {
                "prompt_tokens": prompt,
                "completion_tokens": used,
                "total_tokens": prompt + used,
                "prompt_tokens_details": {"cached_tokens": cached},
                "completion_tokens_details": {"reasoning_tokens": self.reasoning_tokens},
            }
            events.append(
                self.sse("", {"object": "chat.completion.chunk", "choices": [], "usage": usage})
            )
        events.append(("", "[DONE]"))
        return tuple(events)


def openai_reasoning(agent: ScriptedAgent, context_limit: int = 128_000) -> OpenAIChat:
    return OpenAIChat(agent, context_limit, reasoning_tokens=160, reasoning_model=True)


def vllm(agent: ScriptedAgent, context_limit: int = 32_768) -> OpenAIChat:
    return OpenAIChat(
        agent, context_limit, output_limit=16_384, model="Qwen/Qwen3-32B",
        reasoning_text="The candidates differ in where they fix the parser; keep reading.",
        report_usage=False, check_request_total=True, repeat_ids=True, break_every=7,
    )  # fmt: skip


# -- Anthropic Messages -----------------------------------------------------------------------


def _signature(text: str) -> str:
    return "sig-" + hashlib.sha256(text.encode()).hexdigest()[:24]


@dataclass
class Anthropic(Provider):
    overload_every: int = 7  # HTTP 529 on every n-th POST
    stream_error_at: int = 4  # the n-th POST dies with an overloaded_error event
    posts: int = 0

    def __call__(self, request: RecordedRequest) -> FakeResponse:
        if request.method == "GET":
            info = {
                "type": "model",
                "id": self.model,
                "display_name": "Fake",
                "max_input_tokens": self.context_limit,
                "max_tokens": self.output_limit,
            }
            return FakeResponse(body=info)
        self.posts += 1
        body = request.body
        prompt = self._prompt(body)
        if self.overload_every and self.posts % self.overload_every == 0:
            self.records.append(Record(request.path, "http 529", prompt))
            return FakeResponse(529, error_body("Overloaded", "overloaded_error"))
        problem = self._check(body)
        if problem:
            self.records.append(Record(request.path, "http 400", prompt))
            return FakeResponse(400, error_body(problem, "invalid_request_error"))
        if prompt > self.context_limit:
            self.records.append(Record(request.path, "http 400", prompt))
            msg = f"prompt is too long: {prompt} tokens > {self.context_limit} maximum"
            return FakeResponse(400, error_body(msg, "invalid_request_error"))
        rendered = [json.dumps(body.get("tools", [])), json.dumps(body.get("system"))] + [
            json.dumps(b, sort_keys=True) for m in body["messages"] for b in m["content"]
        ]
        cached = min(self._prefix_tokens(rendered), prompt) if self._cached(body) else 0
        if self.posts == self.stream_error_at:
            self.records.append(Record(request.path, "stream error", prompt))
            start = {"type": "message_start", "message": self._message({"input_tokens": prompt})}
            err = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
            return FakeResponse(events=(self.sse("message_start", start), self.sse("error", err)))
        self._previous = rendered
        turn = self.agent.next_turn(self._neutral(body))
        thinking = body.get("thinking") is not None
        thought = "Comparing the candidates' parser changes." if thinking else ""
        limit = min(int(body["max_tokens"]), self.output_limit)
        turn, used, cut = self._cut(turn, limit, _count(thought))
        self.records.append(Record(request.path, "ok", prompt, cached, used, 0, cut))
        fresh = prompt - cached
        usage = (
            {"input_tokens": 0, "cache_read_input_tokens": cached,
             "cache_creation_input_tokens": fresh}
            if self._cached(body) else {"input_tokens": prompt}
        )  # fmt: skip
        return FakeResponse(events=self._stream(turn, thought, cut, usage, used))

    @staticmethod
    def _cached(body: dict[str, Any]) -> bool:
        return "cache_control" in json.dumps(body)

    @staticmethod
    def _prompt(body: dict[str, Any]) -> int:
        n = _count(json.dumps(body.get("tools", []))) + _count(json.dumps(body.get("system")))
        for m in body.get("messages", []):
            for b in m["content"]:
                n += 3 + _count(
                    str(b.get("text") or b.get("content") or b.get("thinking") or "")
                    + (json.dumps(b["input"]) if "input" in b else "")
                    + str(b.get("name") or "")
                )
        return n

    def _check(self, body: dict[str, Any]) -> str:
        thinking = body.get("thinking") is not None
        if thinking and "temperature" in body:
            return "temperature may only be set to 1 when thinking is enabled"
        if thinking and (body.get("tool_choice") or {}).get("type") in ("any", "tool"):
            return "Thinking may not be enabled when tool_choice forces tool use."
        last = next((m for m in reversed(body["messages"]) if m["role"] == "assistant"), None)
        if thinking and last and any(b["type"] == "tool_use" for b in last["content"]):
            first = last["content"][0]
            if first["type"] != "thinking" or first.get("signature") != _signature(
                first.get("thinking", "")
            ):
                return (
                    "messages: Expected `thinking` or `redacted_thinking`, but found "
                    f"`{first['type']}`. When `thinking` is enabled, a final `assistant` message "
                    "must start with a thinking block."
                )
        return ""

    @staticmethod
    def _neutral(body: dict[str, Any]) -> list[Neutral]:
        out = [Neutral("system", json.dumps(body.get("system")))]
        for m in body["messages"]:
            if m["role"] == "assistant":
                calls = [
                    (b["id"], b["name"], json.dumps(b["input"]))
                    for b in m["content"]
                    if b["type"] == "tool_use"
                ]
                text = "".join(b.get("text", "") for b in m["content"] if b["type"] == "text")
                out.append(Neutral("assistant", text, calls))
                continue
            for b in m["content"]:
                if b["type"] == "tool_result":
                    out.append(Neutral("tool", str(b["content"]), call_id=b["tool_use_id"]))
                elif b["type"] == "text":
                    out.append(Neutral("user", b["text"]))
        return out

    def _message(self, usage: dict[str, int]) -> dict[str, Any]:
        return {
            "id": f"msg_{self.posts}", "type": "message", "role": "assistant",
            "model": self.model, "content": [], "stop_reason": None, "usage": usage,
        }  # fmt: skip

    def _stream(
        self, turn: Turn, thought: str, cut: bool, usage: dict[str, int], used: int
    ) -> tuple[tuple[str, str], ...]:
        ev = [self.sse("message_start", {"type": "message_start", "message": self._message(usage)})]
        index = 0

        def block(start: dict[str, Any], deltas: list[dict[str, Any]]) -> None:
            nonlocal index
            ev.append(
                self.sse(
                    "content_block_start",
                    {"type": "content_block_start", "index": index, "content_block": start},
                )
            )
            for d in deltas:
                ev.append(
                    self.sse(
                        "content_block_delta",
                        {"type": "content_block_delta", "index": index, "delta": d},
                    )
                )
            ev.append(
                self.sse("content_block_stop", {"type": "content_block_stop", "index": index})
            )
            index += 1

        if thought:
            block(
                {"type": "thinking", "thinking": "", "signature": ""},
                [{"type": "thinking_delta", "thinking": thought},
                 {"type": "signature_delta", "signature": _signature(thought)}],
            )  # fmt: skip
        ev.append(("ping", json.dumps({"type": "ping"})))
        if turn.text:
            block({"type": "text", "text": ""}, [{"type": "text_delta", "text": turn.text}])
        for i, (name, args) in enumerate(turn.calls):
            half = len(args) // 2
            ident = f"toolu_{self.posts:03d}_{i}"
            block(
                {"type": "tool_use", "id": ident, "name": name, "input": {}},
                [{"type": "input_json_delta", "partial_json": args[:half]},
                 {"type": "input_json_delta", "partial_json": args[half:]}],
            )  # fmt: skip
        stop = "max_tokens" if cut else ("tool_use" if turn.calls else "end_turn")
        ev.append(
            self.sse(
                "message_delta",
                {
                    "type": "message_delta",
                    "delta": {"stop_reason": stop},
                    "usage": {"output_tokens": used},
                },
            )
        )
        ev.append(self.sse("message_stop", {"type": "message_stop"}))
        return tuple(ev)
