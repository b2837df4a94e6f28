from __future__ import annotations

import json

import httpx
import pytest

from grading.grader.backends.base import (
    Message,
    PermanentBackendError,
    ToolCall,
    ToolSpec,
    TransientBackendError,
)
from grading.grader.backends.openai_compat import OpenAICompatBackend
from grading.grader.tokens import count, request_tokens
from tests.grader.conftest import SleepRecorder
from tests.grader.fakes.llm_server import FakeLLMServer, FakeResponse, error_body, openai_response

READ_FILE = ToolSpec(
    name="read_file",
    description="Read a file",
    parameters={"type": "object", "properties": {"path": {"type": "string"}}},
)
CONVERSATION = (
    Message(role="system", content="You are a grader."),
    Message(role="user", content="Grade group 7."),
    Message(
        role="assistant",
        tool_calls=(ToolCall(id="c1", name="read_file", arguments={"path": "a.py"}),),
    ),
    Message(role="tool", content="1| x = 1", tool_call_id="c1", name="read_file"),
)


def make_backend(
    server: FakeLLMServer,
    client: httpx.Client,
    sleeps: SleepRecorder,
    **kwargs: float,
) -> OpenAICompatBackend:
    options: dict[str, float] = {"timeout_s": 2.0, "max_retries": 2, "backoff_s": 0.5} | kwargs
    return OpenAICompatBackend(
        f"{server.url}/v1",
        "sk-test",
        "fake-model",
        timeout_s=options["timeout_s"],
        max_retries=int(options["max_retries"]),
        backoff_s=options["backoff_s"],
        client=client,
        sleep=sleeps,
    )


def complete(backend: OpenAICompatBackend, seed: int | None = 42):  # type: ignore[no-untyped-def]
    return backend.complete(
        CONVERSATION, [READ_FILE], max_output_tokens=256, temperature=0.0, seed=seed
    )


def test_it_round_trips_a_tool_call(llm_server, http_client, sleeps):
    llm_server.enqueue(
        FakeResponse(body=openai_response(tool_calls=[("c2", "read_file", '{"path": "b.py"}')]))
    )
    completion = complete(make_backend(llm_server, http_client, sleeps))

    assert completion.message.role == "assistant"
    assert completion.message.tool_calls == (
        ToolCall(
            id="c2", name="read_file", arguments={"path": "b.py"}, raw_arguments='{"path": "b.py"}'
        ),
    )
    assert completion.stop_reason == "tool_calls"
    assert completion.input_tokens == 11
    assert completion.output_tokens == 7
    assert completion.latency_s > 0


def test_it_sends_the_exact_request_json(llm_server, http_client, sleeps):
    llm_server.enqueue(FakeResponse(body=openai_response(content="done")))
    complete(make_backend(llm_server, http_client, sleeps), seed=42)

    [request] = llm_server.requests
    assert request.path == "/v1/chat/completions"
    assert request.headers["authorization"] == "Bearer sk-test"
    assert request.body == {
        "model": "fake-model",
        "max_tokens": 256,
        "temperature": 0.0,
        "seed": 42,
        # Streamed (idle timeout, not a total one), with usage in the last chunk.
        "stream": True,
        "stream_options": {"include_usage": True},
        "messages": [
            {"role": "system", "content": "You are a grader."},
            {"role": "user", "content": "Grade group 7."},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "c1",
                        "type": "function",
                        "function": {"name": "read_file", "arguments": '{"path": "a.py"}'},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "c1", "content": "1| x = 1"},
        ],
        "tools": [
            {
                "type": "function",
                "function": {
                    "name": "read_file",
                    "description": "Read a file",
                    "parameters": {"type": "object", "properties": {"path": {"type": "string"}}},
                },
            }
        ],
    }


def test_it_omits_the_seed_when_none_is_given(llm_server, http_client, sleeps):
    llm_server.enqueue(FakeResponse(body=openai_response(content="done")))
    complete(make_backend(llm_server, http_client, sleeps), seed=None)
    assert "seed" not in llm_server.requests[0].body


def test_it_echoes_malformed_arguments_back_verbatim(llm_server, http_client, sleeps):
    broken = ToolCall(
        id="c9", name="read_file", arguments=None, raw_arguments='{"path": ', error="x"
    )
    llm_server.enqueue(FakeResponse(body=openai_response(content="ok")))
    make_backend(llm_server, http_client, sleeps).complete(
        [Message(role="assistant", tool_calls=(broken,))],
        [],
        max_output_tokens=10,
        temperature=0.0,
        seed=None,
    )
    sent = llm_server.requests[0].body
    assert sent["messages"][0]["tool_calls"][0]["function"]["arguments"] == '{"path": '
    assert "tools" not in sent


@pytest.mark.parametrize(
    ("raw", "expected_error"),
    [('{"path": "a.py"', "not valid JSON"), ('["a.py"]', "must be a JSON object")],
)
def test_it_reports_malformed_tool_arguments(llm_server, http_client, sleeps, raw, expected_error):
    llm_server.enqueue(FakeResponse(body=openai_response(tool_calls=[("c3", "read_file", raw)])))
    [call] = complete(make_backend(llm_server, http_client, sleeps)).message.tool_calls

    assert call.arguments is None
    assert call.raw_arguments == raw
    assert call.error is not None and expected_error in call.error


def test_it_retries_a_429_honouring_retry_after(llm_server, http_client, sleeps):
    llm_server.enqueue(
        FakeResponse(429, error_body("slow down"), headers={"Retry-After": "7"}),
        FakeResponse(body=openai_response(content="fine")),
    )
    completion = complete(make_backend(llm_server, http_client, sleeps))

    assert completion.message.content == "fine"
    assert len(llm_server.requests) == 2
    assert sleeps.waits == [7.0]


def test_it_caps_a_huge_retry_after(llm_server, http_client, sleeps):
    llm_server.enqueue(
        FakeResponse(429, error_body("slow down"), headers={"Retry-After": "86400"}),
        FakeResponse(body=openai_response(content="fine")),
    )
    complete(make_backend(llm_server, http_client, sleeps))
    assert sleeps.waits == [30.0]


def test_it_gives_up_after_repeated_500s(llm_server, http_client, sleeps):
    llm_server.enqueue(*[FakeResponse(500, error_body("boom"))] * 3)
    with pytest.raises(TransientBackendError, match="boom"):
        complete(make_backend(llm_server, http_client, sleeps, max_retries=2))

    assert len(llm_server.requests) == 3
    assert sleeps.waits == [0.5, 1.0]  # exponential backoff


def test_it_retries_a_timeout_then_gives_up(llm_server, http_client, sleeps):
    llm_server.enqueue(*[FakeResponse(body=openai_response(content="late"), delay_s=5)] * 2)
    with pytest.raises(TransientBackendError, match="Timeout"):
        complete(make_backend(llm_server, http_client, sleeps, timeout_s=0.3, max_retries=1))
    assert len(llm_server.requests) == 2


def test_it_recovers_from_one_timeout(llm_server, http_client, sleeps):
    llm_server.enqueue(
        FakeResponse(body=openai_response(content="late"), delay_s=5),
        FakeResponse(body=openai_response(content="on time")),
    )
    completion = complete(make_backend(llm_server, http_client, sleeps, timeout_s=0.3))
    assert completion.message.content == "on time"


def test_it_treats_a_refused_connection_as_transient(http_client, sleeps):
    server = FakeLLMServer()
    url = server.url
    server.stop()  # never started: the port now refuses connections
    backend = OpenAICompatBackend(url, "k", "m", max_retries=1, client=http_client, sleep=sleeps)
    with pytest.raises(TransientBackendError, match="ConnectError"):
        complete(backend)


@pytest.mark.parametrize("status", [400, 401, 403, 404])
def test_it_fails_permanently_on_client_errors(llm_server, http_client, sleeps, status):
    llm_server.enqueue(FakeResponse(status, error_body("Incorrect API key provided")))
    with pytest.raises(PermanentBackendError, match=f"HTTP {status}: Incorrect API key provided"):
        complete(make_backend(llm_server, http_client, sleeps))
    assert len(llm_server.requests) == 1
    assert sleeps.waits == []


def test_it_treats_a_response_without_choices_as_transient(llm_server, http_client, sleeps):
    llm_server.enqueue(FakeResponse(body={"object": "chat.completion", "choices": []}))
    with pytest.raises(TransientBackendError, match="no choices"):
        complete(make_backend(llm_server, http_client, sleeps))


def test_it_accepts_text_only_answers_without_usage(llm_server, http_client, sleeps):
    body = openai_response(content="All good.")
    del body["usage"]
    llm_server.enqueue(FakeResponse(body=json.dumps(body)))
    completion = complete(make_backend(llm_server, http_client, sleeps))

    assert completion.message.content == "All good."
    assert completion.message.tool_calls == ()
    # No usage: our tokenizer's counts, flagged (zeros would silently disable every budget).
    assert completion.usage_estimated
    assert completion.input_tokens == request_tokens(CONVERSATION, [READ_FILE])
    assert completion.output_tokens == count("All good.") > 0
    assert completion.stop_reason == "stop"
