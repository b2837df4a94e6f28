from __future__ import annotations

import json

import pytest

from grading.grader.backends.anthropic import EPHEMERAL, AnthropicBackend
from grading.grader.backends.base import (
    CallOptions,
    Message,
    PermanentBackendError,
    ToolCall,
    ToolSpec,
    TransientBackendError,
)
from tests.grader.fakes.llm_server import (
    FakeLLMServer,
    FakeResponse,
    RecordedRequest,
    anthropic_response,
    error_body,
)

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


def test_failed_results_carry_is_error_and_a_forced_choice_maps_to_any(
    llm_server, http_client, sleeps
):
    llm_server.enqueue(
        FakeResponse(body=anthropic_response("ok")), FakeResponse(body=anthropic_response("ok"))
    )
    failed = Message(role="tool", content="error: no such file", tool_call_id="t2",
                     name="list_files", is_error=True)  # fmt: skip
    backend = make_backend(llm_server, http_client, sleeps)
    backend.complete(
        [*CONVERSATION[:4], failed], [LIST_FILES], max_output_tokens=64, temperature=0.0,
        seed=None, options=CallOptions(tool_choice="required"),
    )  # fmt: skip
    backend.complete(
        CONVERSATION, [LIST_FILES], max_output_tokens=64, temperature=0.0, seed=None,
        options=CallOptions(tool_choice="list_files"),
    )  # fmt: skip
    first, second = (r.body for r in llm_server.requests)
    results = first["messages"][-1]["content"]
    assert results[-1]["is_error"] is True and "is_error" not in results[0]
    assert first["tool_choice"] == {"type": "any"}
    assert second["tool_choice"] == {"type": "tool", "name": "list_files"}


def test_extended_thinking_drops_temperature_and_sends_thinking_back(
    llm_server, http_client, sleeps
):
    thinking = {"type": "thinking", "thinking": "compare A and B", "signature": "sig-1"}
    answer = anthropic_response("", [("t9", "list_files", {"tree": "B"})])
    answer["content"].insert(0, thinking)
    llm_server.enqueue(FakeResponse(body=answer), FakeResponse(body=anthropic_response("ok")))
    backend = make_backend(llm_server, http_client, sleeps, thinking_budget=2048)
    first = backend.complete(
        CONVERSATION, [LIST_FILES], max_output_tokens=8192, temperature=0.0, seed=None,
        options=CallOptions(tool_choice="required"),
    )  # fmt: skip
    assert first.message.thinking_blocks == (thinking,)
    assert first.message.reasoning == "compare A and B"
    body = llm_server.requests[0].body
    assert body["thinking"] == {"type": "enabled", "budget_tokens": 2048}
    assert (
        "temperature" not in body and "tool_choice" not in body
    )  # forcing is refused with thinking
    result = Message(role="tool", content="b.py", tool_call_id="t9", name="list_files")
    backend.complete(
        [*CONVERSATION, first.message, result], [LIST_FILES], max_output_tokens=8192,
        temperature=0.0, seed=None,
    )  # fmt: skip
    sent = llm_server.requests[1].body["messages"]
    assert sent[-2]["role"] == "assistant" and sent[-2]["content"][0] == thinking


def test_a_cut_reply_and_the_models_api_window(llm_server, http_client, sleeps):
    llm_server.enqueue(FakeResponse(body=anthropic_response("partial", stop_reason="max_tokens")))
    c = complete(make_backend(llm_server, http_client, sleeps))
    assert c.truncated and c.stop_reason == "max_tokens"

    def models(request: RecordedRequest) -> FakeResponse:
        return FakeResponse(body={"id": "claude-fake", "type": "model", "max_input_tokens": 200000,
                                  "max_tokens": 64000})  # fmt: skip

    server = FakeLLMServer(handler=models).start()
    try:
        limits = make_backend(server, http_client, sleeps).limits()
    finally:
        server.stop()
    assert (limits.context_window, limits.max_output_tokens) == (200000, 64000)


def test_an_overloaded_error_in_mid_stream_is_retried(llm_server, http_client, sleeps):
    start = {"type": "message_start", "message": {"id": "m", "content": [],
                                                  "usage": {"input_tokens": 40}}}  # fmt: skip
    error = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    llm_server.enqueue(
        FakeResponse(events=(("message_start", json.dumps(start)), ("error", json.dumps(error)))),
        FakeResponse(body=anthropic_response("fine")),
    )
    c = complete(make_backend(llm_server, http_client, sleeps))
    assert c.message.content == "fine"
    [lost] = c.abandoned
    assert lost.status == "StreamError" and lost.input_tokens > 0
