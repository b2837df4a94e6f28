"""Spend: prices with cached input, limits per run and per day, tokens of abandoned deliveries."""

from __future__ import annotations

import json
from decimal import Decimal
from typing import Any

import pytest

from grading.models import GraderConfig, GraderEvent, GraderRun, Group
from grading.selectors.grader import group_grading_status
from grading.services.grader_runs import grader_run_execute, grader_runs_reap, grader_runs_request
from tests.grader.fakes.llm_server import FakeLLMServer, FakeResponse, openai_response
from tests.grading_service.test_worker import _Recording

pytestmark = pytest.mark.django_db


def grade(group: Group, config: GraderConfig) -> GraderRun:
    (run,) = grader_runs_request(groups=[group], config=config)
    grader_run_execute(run_id=run.pk, worker="test")
    run.refresh_from_db()
    return run


def test_a_daily_token_limit_stops_the_run_and_the_group_falls_back(sample_group: Group) -> None:
    config = GraderConfig.objects.create(
        name="capped-daily", backend="heuristic", max_tokens_per_day=1000
    )
    run = grade(sample_group, config)
    assert run.status == "failed"
    assert run.failure_reason.startswith("spend limit: configuration 'capped-daily' has used 0")
    assert "of its 1,000 tokens today" in run.failure_reason
    status = group_grading_status(group=sample_group, config=config)
    assert status.fallback and "spend limit" in status.reason


def test_a_run_money_limit_stops_before_the_call_that_would_pass_it(sample_group: Group) -> None:
    config = GraderConfig.objects.create(
        name="capped-run", backend="heuristic", usd_per_mtok_in=3.0, usd_per_mtok_out=15.0,
        max_usd_per_run=Decimal("0.001"),
    )  # fmt: skip
    run = grade(sample_group, config)
    assert run.status == "failed" and "the run's money limit ($0.001) would be passed" in (
        run.failure_reason
    )
    assert run.llm_calls == 0


def test_a_lost_delivery_keeps_what_its_calls_cost(sample_group: Group) -> None:
    config = GraderConfig.objects.create(name="h-lost", backend="heuristic")
    (run,) = grader_runs_request(groups=[sample_group], config=config)
    GraderRun.objects.filter(pk=run.pk).update(
        status="running", deliveries=1, claimed_by="dead", heartbeat_at="2000-01-01T00:00:00Z"
    )
    for seq, (tin, tout) in enumerate([(900, 50), (1300, 70)]):
        GraderEvent.objects.create(
            run=run, seq=seq, kind="llm_call", input_tokens=tin, output_tokens=tout,
            cost_usd=Decimal("0.01"),
        )  # fmt: skip
    assert grader_runs_reap() == [run.pk]
    grader_run_execute(run_id=run.pk, worker="second")
    run.refresh_from_db()
    assert run.status == "succeeded" and run.deliveries == 2
    assert (run.abandoned_input_tokens, run.abandoned_output_tokens) == (2200, 120)
    assert run.abandoned_cost_usd == Decimal("0.02")
    assert not GraderEvent.objects.filter(run=run, input_tokens=900).exists()


def test_cost_counts_cached_input_at_its_own_price(sample_group: Group, tmp_path: Any) -> None:
    from grading.grader.loop import run_grader
    from grading.services.grader_inputs import group_input

    rec = _Recording()
    assert run_grader(group_input(group_id=sample_group.pk), rec, seed=0).status == "ok"
    bodies = []
    for i, c in enumerate(rec.completions):
        body = openai_response(
            c.message.content or None,
            [(t.id, t.name, json.dumps(t.arguments)) for t in c.message.tool_calls],
            prompt_tokens=2000 + 100 * i,
            completion_tokens=40,
        )
        body["usage"]["prompt_tokens_details"] = {"cached_tokens": 1024 if i else 0}
        bodies.append(body)
    server = FakeLLMServer().start()
    try:
        server.enqueue(*(FakeResponse(body=b) for b in bodies))
        config = GraderConfig.objects.create(
            name="priced", backend="openai", base_url=f"{server.url}/v1", model="m",
            usd_per_mtok_in=3.0, usd_per_mtok_cached_in=0.3, usd_per_mtok_out=15.0,
            prompt_version="v1",  # superseded: the run records what it really used
        )  # fmt: skip
        run = grade(sample_group, config)
    finally:
        server.stop()
    assert run.status == "succeeded", run.failure_reason
    n = len(bodies)
    prompt = sum(2000 + 100 * i for i in range(n))
    cached = 1024 * (n - 1)
    assert (run.input_tokens, run.cached_input_tokens, run.output_tokens) == (
        prompt,
        cached,
        40 * n,
    )
    expected = ((prompt - cached) * 3.0 + cached * 0.3 + 40 * n * 15.0) / 1e6
    assert float(run.cost_usd) == pytest.approx(expected, abs=2e-6)
    assert run.prompt_version == "v2" and not run.usage_estimated
    events = GraderEvent.objects.filter(run=run, kind="llm_call")
    per_call = [float(e.cost_usd or 0) for e in events]
    assert sum(per_call) == pytest.approx(expected, abs=1e-5)
