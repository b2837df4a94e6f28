"""Keeping every request inside the model's context window, and cheap to cache.

The conversation only grows by appending, so each request's input is the previous request's plus
the new turn: an exact prefix that providers' prompt caches reuse. When the estimate passes the
high-water mark, old tool results (and the arguments of accepted grades) are replaced in one block
by short stubs naming the call, down to the low-water mark; the prefix then breaks once, at the
first stub, and grows append-only again. Doing this at every turn would break the cache at every
turn.

Estimates use cl100k (`grading.grader.tokens`) scaled by the ratio of the server's own count to
our estimate of the same request, so another model's tokenizer is learned from its answers.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from grading.grader import tokens
from grading.grader.backends.base import Message, ToolCall, ToolSpec
from grading.grader.protocol import SUBMISSION_TOOLS

DEFAULT_CONTEXT_WINDOW = 128_000  # when neither the configuration nor the server says
DEFAULT_CONTEXT_TARGET = 60_000  # our own ceiling: long contexts cost more and read worse
STUB_MIN_TOKENS = 60  # results shorter than this are left alone
COMPACTED = "compacted"


@dataclass
class ContextWindow:
    window: int = DEFAULT_CONTEXT_WINDOW
    target: int = DEFAULT_CONTEXT_TARGET
    source: str = "default"

    def limit(self, max_output: int) -> int:
        """The largest request input we send: inside the window with room for the reply (and
        a margin for tokenizer differences), and below our own target."""
        margin = max(256, self.window // 50)
        return max(1024, min(self.window - max_output - margin, self.target))


def stub_text(call: ToolCall | None, name: str, original_tokens: int) -> str:
    args = json.dumps(call.arguments, sort_keys=True) if call and call.arguments else "{}"
    return (
        f"[{COMPACTED}: the result of {name} {args} ({original_tokens} tokens) was removed to "
        "keep the context small; call the tool again if you need it]"
    )


@dataclass
class ContextManager:
    window: ContextWindow = field(default_factory=ContextWindow)
    # Compact down to this share of the limit. 0: every result the model has already seen goes in
    # one block, which keeps compactions rarest and the cached share highest (see the module doc).
    low_water: float = 0.0
    scale: float = 1.0  # server tokens per cl100k token, learned
    compactions: int = 0
    _cache: dict[int, tuple[Message, int]] = field(default_factory=dict)

    def message_tokens(self, message: Message) -> int:
        hit = self._cache.get(id(message))
        if hit is not None and hit[0] is message:
            return hit[1]
        n = tokens.message_tokens(message)
        self._cache[id(message)] = (message, n)
        return n

    def raw_estimate(self, messages: Sequence[Message], tools: Sequence[ToolSpec]) -> int:
        body = sum(self.message_tokens(m) for m in messages)
        return body + tokens.tools_tokens(tools) + tokens.REPLY_PRIMER

    def estimate(self, messages: Sequence[Message], tools: Sequence[ToolSpec]) -> int:
        return round(self.raw_estimate(messages, tools) * self.scale)

    def calibrate(self, raw_estimate: int, server_tokens: int) -> None:
        """Learn the server's tokenizer from its count of a request we estimated."""
        if raw_estimate > 500 and server_tokens > 0:
            self.scale = min(2.0, max(0.7, server_tokens / raw_estimate))

    def compact(
        self,
        messages: list[Message],
        tools: Sequence[ToolSpec],
        *,
        keep_from: int,
        max_output: int,
    ) -> int:
        """Stub old results in place (messages before `keep_from`) until the estimate is at the
        low-water mark. Returns how many messages changed."""
        goal = round(self.window.limit(max_output) * self.low_water)
        current = self.estimate(messages, tools)
        calls = {c.id: c for m in messages for c in m.tool_calls}
        failed = {m.tool_call_id for m in messages if m.role == "tool" and m.is_error}
        changed = 0
        for i in range(min(keep_from, len(messages))):
            if current <= goal:
                break
            old = messages[i]
            new = self._compacted(old, calls, failed)
            if new is None:
                continue
            saved = self.message_tokens(old) - self.message_tokens(new)
            if saved <= 0:
                continue
            messages[i] = new
            current -= round(saved * self.scale)
            changed += 1
        if changed:
            self.compactions += 1
        return changed

    def _compacted(
        self, m: Message, calls: dict[str, ToolCall], failed: set[str | None]
    ) -> Message | None:
        if m.role == "tool" and not m.content.startswith(f"[{COMPACTED}"):
            n = self.message_tokens(m)
            if n < STUB_MIN_TOKENS:
                return None
            call = calls.get(m.tool_call_id or "")
            return replace(m, content=stub_text(call, m.name or "?", n))
        if m.role == "assistant" and m.tool_calls:
            new_calls = []
            for c in m.tool_calls:
                big = tokens.count(c.raw_arguments or json.dumps(c.arguments)) > STUB_MIN_TOKENS
                if c.name in SUBMISSION_TOOLS and c.id not in failed and big and c.arguments:
                    short = {"candidate": c.arguments.get("candidate"), COMPACTED: True}
                    short = {k: v for k, v in short.items() if v is not None}
                    new_calls.append(replace(c, arguments=short, raw_arguments=json.dumps(short)))
                else:
                    new_calls.append(c)
            if new_calls != list(m.tool_calls):
                # Reasoning of old turns is not needed again; providers drop it anyway.
                return replace(m, tool_calls=tuple(new_calls), thinking_blocks=())
        return None


def common_prefix_tokens(
    previous: Sequence[Message] | None, current: Sequence[Message], cm: ContextManager
) -> int:
    """Tokens of `current` that repeat `previous` exactly from the start (whole messages): what
    a prompt cache can reuse. Tools and system come first and count when unchanged."""
    if previous is None:
        return 0
    n = 0
    for a, b in zip(previous, current, strict=False):
        if a != b:
            break
        n += cm.message_tokens(b)
    return n
