"""`manage.py grader_check` against fake endpoints over real HTTP."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from typing import Any

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from grading.models import GraderConfig
from tests.grader.fakes.llm_server import (
    FakeLLMServer,
    FakeResponse,
    RecordedRequest,
    error_body,
    openai_response,
)

pytestmark = pytest.mark.django_db


class Endpoint:
    """A vLLM-like server: states its window on /models, answers chat calls from a script."""

    def __init__(self, *replies: FakeResponse) -> None:
        self.replies = list(replies)
        self.bodies: list[Any] = []

    def __call__(self, request: RecordedRequest) -> FakeResponse:
        if request.method == "GET":
            card = {"id": "qwen", "object": "model", "max_model_len": 32768}
            return FakeResponse(body={"object": "list", "data": [card]})
        self.bodies.append(request.body)
        return self.replies.pop(0)


@pytest.fixture
def serve() -> Iterator[Any]:
    servers: list[FakeLLMServer] = []

    def start(endpoint: Endpoint) -> GraderConfig:
        server = FakeLLMServer(handler=endpoint).start()
        servers.append(server)
        return GraderConfig.objects.create(
            name=f"check-{len(servers)}", backend="openai", base_url=f"{server.url}/v1",
            model="qwen", usd_per_mtok_in=1.0, usd_per_mtok_out=2.0,
        )  # fmt: skip

    yield start
    for s in servers:
        s.stop()


def run(config: GraderConfig) -> str:
    out = io.StringIO()
    call_command("grader_check", config=config.name, stdout=out)
    return out.getvalue()


def test_it_reports_a_working_endpoint_in_plain_words(serve: Any) -> None:
    endpoint = Endpoint(
        FakeResponse(body=openai_response(tool_calls=[("c1", "add", '{"a": 2, "b": 3}')],
                                          prompt_tokens=120, completion_tokens=20)),
        FakeResponse(body=openai_response("5", prompt_tokens=150, completion_tokens=2)),
    )  # fmt: skip
    text = run(serve(endpoint))
    assert "context window: 32,768 tokens (from GET /models max_model_len)" in text
    assert "tool calling: works (the model called add(a=2, b=3) by itself)" in text
    assert "usage: reported by the server" in text and "reasoning: none returned" in text
    # 270 input tokens at $1/M and 22 output at $2/M.
    assert "2 calls: 270 input (0 cached), 22 output tokens; cost $0.000314" in text
    assert text.rstrip().endswith("ready for grading")
    assert endpoint.bodies[1]["messages"][-1] == {"role": "tool", "tool_call_id": "c1",
                                                  "content": "5"}  # fmt: skip


def test_it_says_when_usage_is_missing_and_the_model_reasons(serve: Any) -> None:
    first = openai_response(tool_calls=[("c1", "add", '{"a": 2, "b": 3}')])
    first["choices"][0]["message"]["reasoning_content"] = "2 plus 3, use the tool"
    del first["usage"]
    second = openai_response("5")
    del second["usage"]
    text = run(serve(Endpoint(FakeResponse(body=first), FakeResponse(body=second))))
    assert "usage: NOT reported by the server; tokens are estimated" in text
    assert "reasoning: the model returns reasoning" in text


def test_it_explains_a_reasoning_model_configured_as_a_chat_model(serve: Any) -> None:
    refusal = error_body(
        "Unsupported parameter: 'max_tokens' is not supported with this model. "
        "Use 'max_completion_tokens' instead.",
        "invalid_request_error",
    )
    config = serve(Endpoint(FakeResponse(400, refusal)))
    out = io.StringIO()
    with pytest.raises(CommandError, match="not ready"):
        call_command("grader_check", config=config.name, stdout=out)
    assert "refused the request: HTTP 400: Unsupported parameter: 'max_tokens'" in out.getvalue()
    assert "set options reasoning=true" in out.getvalue()


def test_it_fails_when_the_model_never_calls_the_tool(serve: Any) -> None:
    endpoint = Endpoint(
        FakeResponse(body=openai_response("It is 5.")),
        FakeResponse(body=openai_response("Still 5.")),
    )
    out = io.StringIO()
    with pytest.raises(CommandError):
        call_command("grader_check", config=serve(endpoint).name, stdout=out)
    assert "tool calling: DOES NOT WORK" in out.getvalue()
    assert endpoint.bodies[1]["tool_choice"] == "required"  # it was asked once more, forced
    assert json.dumps(endpoint.bodies[0]).count('"tool_choice"') == 0
