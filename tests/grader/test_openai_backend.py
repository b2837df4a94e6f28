from __future__ import annotations

import json

import httpx
import pytest

from grading.grader.backends.base import (
    CallOptions,
    ContextOverflowError,
    Message,
    PermanentBackendError,
    ToolCall,
    ToolSpec,
    TransientBackendError,
)
from grading.grader.backends.openai_compat import OpenAICompatBackend
from grading.grader.tokens import count, request_tokens
from tests.grader.conftest import SleepRecorder
from tests.grader.fakes.llm_server import (
    FakeLLMServer,
    FakeResponse,
    RecordedRequest,
    error_body,
    openai_response,
)

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


def _chunks(*deltas: dict, finish: str = "stop", usage: dict | None = None) -> tuple:
    events = [
        ("", json.dumps({"choices": [{"index": 0, "delta": d, "finish_reason": None}]}))
        for d in deltas
    ]
    events.append(
        ("", json.dumps({"choices": [{"index": 0, "delta": {}, "finish_reason": finish}]}))
    )
    if usage is not None:
        events.append(("", json.dumps({"choices": [], "usage": usage})))
    events.append(("", "[DONE]"))
    return tuple(events)


def test_a_reasoning_model_gets_max_completion_tokens_and_no_temperature(
    llm_server, http_client, sleeps
):
    llm_server.enqueue(FakeResponse(body=openai_response(content="ok")))
    backend = OpenAICompatBackend(
        f"{llm_server.url}/v1", "k", "o-model", reasoning=True, reasoning_effort="high",
        client=http_client, sleep=sleeps,
    )  # fmt: skip
    backend.complete(
        CONVERSATION, [READ_FILE], max_output_tokens=9000, temperature=0.0, seed=None,
        options=CallOptions(tool_choice="required"),
    )  # fmt: skip
    body = llm_server.requests[0].body
    assert body["max_completion_tokens"] == 9000 and "max_tokens" not in body
    assert "temperature" not in body and body["reasoning_effort"] == "high"
    assert body["tool_choice"] == "required"


def test_a_named_tool_choice_forces_that_function(llm_server, http_client, sleeps):
    llm_server.enqueue(FakeResponse(body=openai_response(content="ok")))
    make_backend(llm_server, http_client, sleeps).complete(
        CONVERSATION, [READ_FILE], max_output_tokens=10, temperature=0.0, seed=None,
        options=CallOptions(tool_choice="read_file"),
    )  # fmt: skip
    choice = llm_server.requests[0].body["tool_choice"]
    assert choice == {"type": "function", "function": {"name": "read_file"}}


def test_a_streamed_answer_is_assembled_with_reasoning_usage_and_cached_tokens(
    llm_server, http_client, sleeps
):
    usage = {
        "prompt_tokens": 900, "completion_tokens": 120, "total_tokens": 1020,
        "prompt_tokens_details": {"cached_tokens": 768},
        "completion_tokens_details": {"reasoning_tokens": 100},
    }  # fmt: skip
    call = {"index": 0, "id": "call_a", "type": "function", "function": {"name": "read_file"}}
    events = _chunks(
        {"role": "assistant", "content": ""},
        {"reasoning": "look at a.py "},
        {"reasoning_content": "first"},
        {"tool_calls": [{**call, "function": {"name": "read_file", "arguments": '{"pa'}}]},
        {"tool_calls": [{"index": 0, "function": {"arguments": 'th": "a.py"}'}}]},
        finish="tool_calls",
        usage=usage,
    )
    llm_server.enqueue(FakeResponse(events=events))
    c = complete(make_backend(llm_server, http_client, sleeps))
    assert c.message.tool_calls == (
        ToolCall("call_a", "read_file", {"path": "a.py"}, raw_arguments='{"path": "a.py"}'),
    )
    assert c.message.reasoning == "look at a.py first"
    assert (c.input_tokens, c.cached_input_tokens, c.output_tokens, c.reasoning_tokens) == (
        900, 768, 120, 100,
    )  # fmt: skip
    assert not c.usage_estimated and not c.truncated


def test_a_cut_stream_is_flagged_truncated(llm_server, http_client, sleeps):
    function = {"name": "read_file", "arguments": '{"pa'}
    call = {"index": 0, "id": "c", "type": "function", "function": function}
    llm_server.enqueue(FakeResponse(events=_chunks({"tool_calls": [call]}, finish="length")))
    c = complete(make_backend(llm_server, http_client, sleeps))
    assert c.truncated and c.stop_reason == "length"
    assert c.message.tool_calls[0].arguments is None


def test_a_slow_but_steady_stream_is_not_cut_by_the_idle_timeout(llm_server, http_client, sleeps):
    deltas = [{"content": f"word{i} "} for i in range(8)]
    llm_server.enqueue(FakeResponse(events=_chunks(*deltas), event_delay_s=0.15))
    # 0.4 s of silence is allowed; the whole answer takes about 1.4 s.
    c = complete(make_backend(llm_server, http_client, sleeps, timeout_s=0.4))
    assert c.message.content.startswith("word0 word1") and c.latency_s > 1.0


def test_a_stream_that_goes_silent_is_retried_and_its_tokens_kept(llm_server, http_client, sleeps):
    partial = _chunks({"content": "a long answer that never ends " * 20})
    llm_server.enqueue(
        FakeResponse(events=partial, stall_after=1),
        FakeResponse(body=openai_response(content="done")),
    )
    c = complete(make_backend(llm_server, http_client, sleeps, timeout_s=0.3))
    assert c.message.content == "done"
    [lost] = c.abandoned
    assert "ReadTimeout" in lost.status and lost.estimated
    assert lost.input_tokens == request_tokens(CONVERSATION, [READ_FILE])
    assert lost.output_tokens == count("a long answer that never ends " * 20)


def test_repeated_or_missing_call_ids_are_made_unique(llm_server, http_client, sleeps):
    backend = make_backend(llm_server, http_client, sleeps)
    for _ in range(2):
        llm_server.enqueue(
            FakeResponse(body=openai_response(tool_calls=[("call_0", "read_file", "{}")]))
        )
    first = complete(backend).message.tool_calls[0].id
    second = complete(backend).message.tool_calls[0].id
    assert first == "call_0" and second != "call_0" and second.startswith("call_")


def test_a_context_length_refusal_names_the_window_and_the_prompt(llm_server, http_client, sleeps):
    msg = (
        "This model's maximum context length is 32768 tokens. However, you requested 35000 "
        "tokens (31000 in the messages, 4000 in the completion). Please reduce the length."
    )
    llm_server.enqueue(FakeResponse(400, error_body(msg, "BadRequestError")))
    with pytest.raises(ContextOverflowError) as err:
        complete(make_backend(llm_server, http_client, sleeps))
    assert (err.value.limit, err.value.prompt_tokens) == (32768, 31000)


def test_the_served_window_is_read_from_models(http_client, sleeps):
    def answer(request: RecordedRequest) -> FakeResponse:
        cards = [{"id": "other", "max_model_len": 8}, {"id": "fake-model", "max_model_len": 131072}]
        return FakeResponse(body={"object": "list", "data": cards})

    server = FakeLLMServer(handler=answer).start()
    try:
        limits = make_backend(server, http_client, sleeps).limits()
    finally:
        server.stop()
    assert limits.context_window == 131072 and "max_model_len" in limits.source


def test_openai_itself_gets_max_completion_tokens_even_for_chat_models():
    official = OpenAICompatBackend("https://api.openai.com/v1", "k", "gpt-fake")
    local = OpenAICompatBackend("http://127.0.0.1:8000/v1", "", "qwen")
    assert (official.limit_parameter, local.limit_parameter) == (
        "max_completion_tokens",
        "max_tokens",
    )
    official.close()
    local.close()
