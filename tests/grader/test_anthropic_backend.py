from __future__ import annotations

import pytest

from grading.grader.backends.anthropic import EPHEMERAL, AnthropicBackend
from grading.grader.backends.base import (
    Message,
    PermanentBackendError,
    ToolCall,
    ToolSpec,
    TransientBackendError,
)
from tests.grader.fakes.llm_server import FakeResponse, anthropic_response, error_body

LIST_FILES = ToolSpec(
    name="list_files",
    description="List files",
    parameters={"type": "object", "properties": {"tree": {"type": "string"}}},
)
CONVERSATION = (
    Message(role="system", content="You are a grader."),
    Message(role="user", content="Grade group 7."),
    Message(
        role="assistant",
        content="Looking at both trees.",
        tool_calls=(
            ToolCall(id="t1", name="list_files", arguments={"tree": "base"}),
            ToolCall(id="t2", name="list_files", arguments={"tree": "A"}),
        ),
    ),
    Message(role="tool", content="a.py", tool_call_id="t1", name="list_files"),
    Message(role="tool", content="a.py\nb.py", tool_call_id="t2", name="list_files"),
)


def make_backend(server, client, sleeps, **kwargs):  # type: ignore[no-untyped-def]
    options = {"timeout_s": 2.0, "max_retries": 2, "backoff_s": 0.5} | kwargs
    return AnthropicBackend(
        server.url, "ak-test", "claude-fake", client=client, sleep=sleeps, **options
    )


def complete(backend):  # type: ignore[no-untyped-def]
    return backend.complete(
        CONVERSATION, [LIST_FILES], max_output_tokens=512, temperature=0.2, seed=7
    )


def test_it_round_trips_a_tool_use(llm_server, http_client, sleeps):
    llm_server.enqueue(
        FakeResponse(body=anthropic_response("Reading.", [("t3", "list_files", {"tree": "B"})]))
    )
    completion = complete(make_backend(llm_server, http_client, sleeps))

    assert completion.message.content == "Reading."
    [call] = completion.message.tool_calls
    assert (call.id, call.name, call.arguments, call.error) == (
        "t3",
        "list_files",
        {"tree": "B"},
        None,
    )
    assert completion.stop_reason == "tool_use"
    assert (completion.input_tokens, completion.output_tokens) == (13, 5)
    assert completion.latency_s > 0


def test_it_sends_the_exact_request_json(llm_server, http_client, sleeps):
    llm_server.enqueue(FakeResponse(body=anthropic_response("done")))
    complete(make_backend(llm_server, http_client, sleeps))

    [request] = llm_server.requests
    assert request.path == "/v1/messages"
    assert request.headers["x-api-key"] == "ak-test"
    assert request.headers["anthropic-version"] == "2023-06-01"
    # No seed: the Messages API has none. Cache breakpoints on the tools, the system prompt and
    # the conversation's last block; streamed.
    assert request.body == {
        "model": "claude-fake",
        "max_tokens": 512,
        "temperature": 0.2,
        "stream": True,
        "system": [{"type": "text", "text": "You are a grader.", "cache_control": EPHEMERAL}],
        "messages": [
            {"role": "user", "content": [{"type": "text", "text": "Grade group 7."}]},
            {
                "role": "assistant",
                "content": [
                    {"type": "text", "text": "Looking at both trees."},
                    {
                        "type": "tool_use",
                        "id": "t1",
                        "name": "list_files",
                        "input": {"tree": "base"},
                    },
                    {"type": "tool_use", "id": "t2", "name": "list_files", "input": {"tree": "A"}},
                ],
            },
            # Both results in one user message.
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": "t1", "content": "a.py"},
                    {
                        "type": "tool_result",
                        "tool_use_id": "t2",
                        "content": "a.py\nb.py",
                        "cache_control": EPHEMERAL,
                    },
                ],
            },
        ],
        "tools": [
            {
                "name": "list_files",
                "description": "List files",
                "input_schema": {"type": "object", "properties": {"tree": {"type": "string"}}},
                "cache_control": EPHEMERAL,
            }
        ],
    }


def test_it_merges_a_user_note_after_tool_results(llm_server, http_client, sleeps):
    llm_server.enqueue(FakeResponse(body=anthropic_response("ok")))
    make_backend(llm_server, http_client, sleeps).complete(
        [*CONVERSATION, Message(role="user", content="Submit your verdict now.")],
        [],
        max_output_tokens=16,
        temperature=0.0,
        seed=None,
    )
    body = llm_server.requests[0].body
    assert [m["role"] for m in body["messages"]] == ["user", "assistant", "user"]
    assert body["messages"][-1]["content"][-1] == {
        "type": "text",
        "text": "Submit your verdict now.",
        "cache_control": EPHEMERAL,
    }
    assert "tools" not in body


def test_it_counts_cached_input_tokens(llm_server, http_client, sleeps):
    body = anthropic_response("hi")
    body["usage"] = {"input_tokens": 3, "cache_read_input_tokens": 100, "output_tokens": 2}
    llm_server.enqueue(FakeResponse(body=body))
    completion = complete(make_backend(llm_server, http_client, sleeps))
    assert (completion.input_tokens, completion.output_tokens) == (103, 2)


@pytest.mark.parametrize("status", [429, 529])
def test_it_retries_rate_limits_and_overload(llm_server, http_client, sleeps, status):
    llm_server.enqueue(
        FakeResponse(status, error_body("Overloaded", "overloaded_error"), {"retry-after": "2"}),
        FakeResponse(body=anthropic_response("fine")),
    )
    completion = complete(make_backend(llm_server, http_client, sleeps))

    assert completion.message.content == "fine"
    assert len(llm_server.requests) == 2
    assert sleeps.waits == [2.0]


def test_it_gives_up_after_repeated_500s(llm_server, http_client, sleeps):
    llm_server.enqueue(*[FakeResponse(500, error_body("internal", "api_error"))] * 3)
    with pytest.raises(TransientBackendError, match="internal"):
        complete(make_backend(llm_server, http_client, sleeps))
    assert len(llm_server.requests) == 3
    assert sleeps.waits == [0.5, 1.0]


def test_it_retries_a_timeout_then_gives_up(llm_server, http_client, sleeps):
    llm_server.enqueue(*[FakeResponse(body=anthropic_response("late"), delay_s=5)] * 2)
    with pytest.raises(TransientBackendError, match="Timeout"):
        complete(make_backend(llm_server, http_client, sleeps, timeout_s=0.3, max_retries=1))
    assert len(llm_server.requests) == 2


def test_it_fails_permanently_on_bad_credentials(llm_server, http_client, sleeps):
    llm_server.enqueue(FakeResponse(401, error_body("invalid x-api-key", "authentication_error")))
    with pytest.raises(PermanentBackendError, match="HTTP 401: invalid x-api-key"):
        complete(make_backend(llm_server, http_client, sleeps))
    assert len(llm_server.requests) == 1
