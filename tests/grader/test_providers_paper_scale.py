"""A paper-scale group (16 candidates, 7-31 KB patches, ~390-event trajectories, 40 KB test logs)
graded end to end over real HTTP by a scripted agent behind each provider personality.

Each run must succeed inside the server's context limit with a verdict that passes the checks,
its transcript must show the cut reply detected and recovered, and its token and cost accounting
must agree with the server's own counts.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from grading.grader.backends.anthropic import AnthropicBackend
from grading.grader.backends.openai_compat import OpenAICompatBackend
from grading.grader.heuristic import HeuristicBackend
from grading.grader.inputs import Budget, GroupInput, Pricing
from grading.grader.loop import GraderOutcome, LogRecord, run_grader
from grading.models import GraderConfig
from grading.services.grader_inputs import context_window_for
from tests.grader.fakes.agent import ScriptedAgent
from tests.grader.fakes.llm_server import FakeLLMServer
from tests.grader.fakes.paper_group import paper_group
from tests.grader.fakes.personalities import Anthropic, Provider, openai_reasoning, vllm

pytestmark = pytest.mark.slow
SEED = 5
PRICING = Pricing(input=3.0, cached_input=0.3, output=15.0)
BUDGET = Budget(max_input_tokens=3_000_000, max_output_tokens=200_000)


@dataclass
class Graded:
    outcome: GraderOutcome
    events: list[LogRecord]
    provider: Provider
    expected: dict[str, Any]


@pytest.fixture(scope="module")
def group() -> GroupInput:
    return paper_group(seed=0)


@pytest.fixture(scope="module")
def expected(group: GroupInput) -> dict[str, Any]:
    """The verdict the agent will send: the heuristic's on the same group and aliases."""
    out = run_grader(group, HeuristicBackend(), seed=SEED)
    assert out.status == "ok", out.reason
    return {k: v for k, v in out.alias_verdict.items() if k != "budget_use"}


def _grade(group: GroupInput, provider: Provider, backend: Any, config: GraderConfig) -> Graded:
    events: list[LogRecord] = []
    out = run_grader(
        group, backend, seed=SEED, budget=BUDGET, pricing=PRICING, on_event=events.append,
        context_window=context_window_for(config, backend),
    )  # fmt: skip
    return Graded(out, events, provider, {})


@pytest.fixture
def serve() -> Iterator[Any]:
    servers: list[FakeLLMServer] = []

    def start(provider: Provider) -> FakeLLMServer:
        server = FakeLLMServer(handler=provider).start()
        servers.append(server)
        return server

    yield start
    for s in servers:
        s.stop()


def _common_checks(g: Graded, expected: dict[str, Any], limit: int) -> None:
    out = g.outcome
    assert out.status == "ok", (out.reason, out.problems)
    verdict = {k: v for k, v in out.alias_verdict.items() if k != "budget_use"}
    assert verdict == expected  # every grade came through intact, the cut one re-sent
    ok = [r for r in g.provider.records if r.status == "ok"]
    assert max(r.prompt for r in ok) <= limit
    # The cut reply: the server cut it, the loop said so, the agent sent it again.
    cut_calls = [e for e in g.events if e.kind == "llm_call" and e.data["truncated"]]
    assert cut_calls and sum(r.cut for r in ok) == len(cut_calls)
    answers = [e.data["output"] for e in g.events if e.kind == "tool_call"]
    assert any("was cut at" in a and "Send it in parts" in a for a in answers)
    assert out.budget_use.truncations >= 1
    assert out.budget_use.llm_calls == len(ok)


def test_an_openai_reasoning_model_grades_the_paper_group(group, expected, serve, sleeps):
    provider = openai_reasoning(ScriptedAgent(expected), context_limit=128_000)
    server = serve(provider)
    backend = OpenAICompatBackend(
        f"{server.url}/v1", "sk-test", "o-fake", reasoning=True, reasoning_effort="high",
        sleep=sleeps,
    )  # fmt: skip
    config = GraderConfig(backend="openai", options={"context_window": 128_000})
    g = _grade(group, provider, backend, config)
    _common_checks(g, expected, 128_000)
    ok = [r for r in provider.records if r.status == "ok"]
    assert not [r for r in provider.records if r.status != "ok"]  # nothing refused
    use = g.outcome.budget_use
    assert use.input_tokens == sum(r.prompt for r in ok)
    assert use.output_tokens == sum(r.output for r in ok)
    assert use.cached_input_tokens == sum(r.cached for r in ok)
    assert use.reasoning_tokens == 160 * len(ok) and not use.usage_estimated
    cost = sum(PRICING.cost(r.prompt, r.cached, r.output) for r in ok)
    assert use.cost_usd == pytest.approx(cost, abs=1e-5)
    assert use.peak_context <= 64_000  # the loop's own target, well inside 128k
    assert use.cached_input_tokens / use.input_tokens >= 0.8


def test_vllm_without_usage_and_with_a_32k_window_grades_the_paper_group(
    group, expected, serve, sleeps
):
    provider = vllm(ScriptedAgent(expected), context_limit=32_768)
    server = serve(provider)
    backend = OpenAICompatBackend(f"{server.url}/v1", "", "Qwen/Qwen3-32B", sleep=sleeps)
    config = GraderConfig(backend="openai")  # the window comes from GET /v1/models
    g = _grade(group, provider, backend, config)
    _common_checks(g, expected, 32_768)
    ok = [r for r in provider.records if r.status == "ok"]
    use = g.outcome.budget_use
    assert use.usage_estimated
    assert use.input_tokens == pytest.approx(sum(r.prompt for r in ok), rel=0.15)
    assert use.output_tokens == pytest.approx(sum(r.output for r in ok), rel=0.15)
    # The reasoning is kept in the transcript; broken arguments were answered and re-sent.
    outs = [e.data["message_out"] for e in g.events if e.kind == "llm_call"]
    assert all("keep reading" in m["reasoning"] for m in outs)
    answers = [e.data["output"] for e in g.events if e.kind == "tool_call"]
    assert any("not a JSON object" in a for a in answers)
    ids = [c["id"] for m in outs for c in m["tool_calls"]]
    assert len(ids) == len(set(ids))  # the server's repeated call_0 ids were made unique


def test_anthropic_with_thinking_overloads_and_128k_grades_the_paper_group(
    group, expected, serve, sleeps
):
    provider = Anthropic(ScriptedAgent(expected), context_limit=128_000, output_limit=32_000)
    server = serve(provider)
    backend = AnthropicBackend(server.url, "ak", "claude-fake", thinking_budget=2048, sleep=sleeps)
    config = GraderConfig(backend="anthropic")  # the window comes from the Models API
    g = _grade(group, provider, backend, config)
    _common_checks(g, expected, 128_000)
    statuses = [r.status for r in provider.records]
    assert "http 529" in statuses and "stream error" in statuses  # overloads, retried
    ok = [r for r in provider.records if r.status == "ok"]
    use = g.outcome.budget_use
    assert use.input_tokens == sum(r.prompt for r in ok)
    assert use.output_tokens == sum(r.output for r in ok)
    assert use.cached_input_tokens == sum(r.cached for r in ok)
    # The delivery that died mid-stream had its prompt processed: recorded, estimated.
    lost = [r for r in provider.records if r.status == "stream error"]
    assert use.abandoned_input_tokens == pytest.approx(sum(r.prompt for r in lost), rel=0.15)
    cost = sum(PRICING.cost(r.prompt, r.cached, r.output) for r in ok)
    cost += PRICING.cost(use.abandoned_input_tokens, 0, use.abandoned_output_tokens)
    assert use.cost_usd == pytest.approx(cost, abs=1e-5)
    assert use.cached_input_tokens / use.input_tokens >= 0.8
    thoughts = [e.data["message_out"]["thinking_blocks"] for e in g.events if e.kind == "llm_call"]
    assert all(t and t[0]["signature"].startswith("sig-") for t in thoughts)
