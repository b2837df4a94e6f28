from __future__ import annotations

import json

import pytest

from grading.grader.backends.anthropic import AnthropicBackend
from grading.grader.backends.base import Message, PermanentBackendError, ToolCall, ToolSpec
from grading.grader.backends.openai_compat import OpenAICompatBackend
from grading.grader.backends.registry import (
    BackendConfigError,
    backend_from_config,
    config_from_env,
)
from grading.grader.backends.scripted import (
    ScriptedBackend,
    ScriptedTurn,
    TranscriptExhaustedError,
    dump_transcript,
    load_transcript,
)

TRANSCRIPT = [
    {"content": "", "tool_calls": [{"id": "c1", "name": "list_files", "arguments": {"tree": "A"}}]},
    {
        "content": "",
        "tool_calls": [{"id": "c2", "name": "read_file", "raw_arguments": '{"path": '}],
    },
    {"content": "Verdict submitted.", "input_tokens": 40, "output_tokens": 9},
]
TOOLS = [ToolSpec("list_files", "List files", {"type": "object"})]


def ask(backend: ScriptedBackend, messages: list[Message]):  # type: ignore[no-untyped-def]
    return backend.complete(messages, TOOLS, max_output_tokens=100, temperature=0.0, seed=3)


def test_it_replays_turns_in_order_and_records_what_it_was_sent():
    backend = ScriptedBackend(TRANSCRIPT)
    history = [Message(role="user", content="Grade.")]

    first = ask(backend, history)
    assert first.message.tool_calls == (
        ToolCall("c1", "list_files", {"tree": "A"}, raw_arguments='{"tree": "A"}'),
    )
    assert first.stop_reason == "tool_use"

    history += [first.message, Message(role="tool", content="a.py", tool_call_id="c1")]
    second = ask(backend, history)
    [broken] = second.message.tool_calls
    assert broken.arguments is None
    assert broken.raw_arguments == '{"path": '
    assert broken.error is not None

    third = ask(backend, history)
    assert third.message.content == "Verdict submitted."
    assert (third.input_tokens, third.output_tokens) == (40, 9)

    assert backend.remaining == 0
    assert len(backend.requests) == 3
    assert backend.messages == tuple(history)
    assert backend.requests[0].messages == (Message(role="user", content="Grade."),)
    assert backend.requests[0].seed == 3


def test_it_fails_clearly_when_asked_for_more_turns_than_recorded():
    backend = ScriptedBackend([{"content": "only one"}])
    ask(backend, [])
    with pytest.raises(TranscriptExhaustedError, match=r"turn 2.*only 1"):
        ask(backend, [])
    assert issubclass(TranscriptExhaustedError, PermanentBackendError)


def test_it_round_trips_a_transcript_file(tmp_path):
    path = tmp_path / "transcript.json"
    path.write_text(json.dumps(TRANSCRIPT))
    turns = load_transcript(path)
    assert isinstance(turns[0], ScriptedTurn)

    dump_transcript(turns, tmp_path / "again.json")
    assert load_transcript(tmp_path / "again.json") == turns


def test_it_rejects_a_transcript_that_is_not_a_list(tmp_path):
    path = tmp_path / "bad.json"
    path.write_text('{"content": "x"}')
    with pytest.raises(ValueError, match="JSON list"):
        load_transcript(path)


def test_registry_builds_each_backend(tmp_path):
    path = tmp_path / "t.json"
    path.write_text(json.dumps(TRANSCRIPT))

    openai = backend_from_config(
        {"backend": "openai", "base_url": "http://127.0.0.1:9/v1", "model": "m", "timeout_s": "5"}
    )
    assert isinstance(openai, OpenAICompatBackend)
    assert openai.timeout_s == 5.0
    anthropic = backend_from_config({"backend": "anthropic", "api_key": "k", "model": "c"})
    assert isinstance(anthropic, AnthropicBackend)
    assert anthropic.base_url == "https://api.anthropic.com"
    scripted = backend_from_config({"backend": "scripted", "transcript": str(path)})
    assert isinstance(scripted, ScriptedBackend)
    assert scripted.remaining == 3


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ({"backend": "openai"}, "GAGAR_GRADER_MODEL"),
        ({"backend": "anthropic", "model": "c"}, "GAGAR_GRADER_API_KEY"),
        ({"backend": "openai", "model": "m", "timeout_s": "soon"}, "must be a number"),
        ({"backend": "gpt"}, "unknown grader backend"),
    ],
)
def test_registry_rejects_bad_settings(config, message):
    with pytest.raises(BackendConfigError, match=message):
        backend_from_config(config)


def test_registry_builds_the_analysis_default_and_the_heuristic_on_request():
    assert backend_from_config({}).name == "analysis"
    try:
        backend = backend_from_config({"backend": "heuristic"})
    except BackendConfigError as exc:
        assert "grading.grader.heuristic.HeuristicBackend" in str(exc)
    else:
        assert backend.name == "heuristic"


def test_config_from_env_maps_the_documented_variables():
    env = {"GAGAR_GRADER_BACKEND": "openai", "GAGAR_GRADER_MODEL": "m", "GAGAR_GRADER_API_KEY": ""}
    assert config_from_env(env) == {"backend": "openai", "model": "m"}
