"""A run's request estimate counts each message once: the same figure as counting the whole
request afresh, without re-tokenizing the conversation on every call."""

from __future__ import annotations

import pytest

from grading.grader import tokens
from grading.grader.backends.base import Message, ToolCall, ToolSpec

TOOLS = (
    ToolSpec("read_file", "Read a file of a candidate.", {"type": "object", "properties": {}}),
    ToolSpec("submit_ranking", "Send the ranking.", {"type": "object", "properties": {}}),
)


def _conversation(n: int) -> list[Message]:
    out = [Message("system", "You grade candidates."), Message("user", "Group: " + "x " * 500)]
    for i in range(n):
        call = ToolCall(f"c{i}", "read_file", {"candidate": "A", "path": f"f{i}.py"})
        out += [
            Message("assistant", "", tool_calls=(call,)),
            Message("tool", f"def f{i}():\n    return {i}\n" * 20, tool_call_id=f"c{i}"),
        ]
    return out


def _texts_counted(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every text `tokens.count` tokenizes from now on, in order (the real count still runs)."""
    seen: list[str] = []
    real = tokens.count

    def counting(text: str) -> int:
        seen.append(text)
        return real(text)

    monkeypatch.setattr(tokens, "count", counting)
    return seen


def test_the_counter_gives_the_full_requests_count_and_tokenizes_each_text_once(monkeypatch):
    counter = tokens.RequestCounter()
    conversation = _conversation(12)
    fresh = _conversation(12)  # equal messages, other objects: counted from scratch
    want = [tokens.request_tokens(fresh[: 2 + 2 * k], TOOLS) for k in range(13)]
    seen = _texts_counted(monkeypatch)
    got = [counter(conversation[: 2 + 2 * k], TOOLS) for k in range(13)]
    assert got == want
    contents = [t for t in seen if t.startswith(("def f", "Group:"))]
    assert len(contents) == len(set(contents)) == 13  # the user message and 12 tool results


def test_a_replaced_message_is_counted_afresh():
    counter = tokens.RequestCounter()
    conversation = _conversation(3)
    first = counter(conversation, TOOLS)
    stubbed = [*conversation[:-1], Message("tool", "[result elided]", tool_call_id="c2")]
    assert counter(stubbed, TOOLS) == tokens.request_tokens(stubbed, TOOLS) < first


def test_a_message_is_tokenized_once_however_many_counters_count_it(monkeypatch):
    """The loop's context manager and the backend's estimate both count every message."""
    conversation = _conversation(4)
    want = tokens.request_tokens(_conversation(4), TOOLS)
    seen = _texts_counted(monkeypatch)
    first, second = tokens.RequestCounter(), tokens.RequestCounter()
    assert first(conversation, TOOLS) == second(conversation, TOOLS) == want
    assert tokens.request_tokens(conversation, TOOLS) == want
    results = [t for t in seen if t.startswith("def f")]
    assert len(results) == 4
    # The count travels with the message only: equality and the transcript ignore it.
    assert conversation == _conversation(4)
