"""Grader runs through real Celery worker processes on Redis (PostgreSQL: workers share the DB)."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from django.db import transaction

from grading.grader.backends.base import Completion, Message, ToolSpec
from grading.grader.heuristic import HeuristicBackend
from grading.grader.loop import run_grader
from grading.models import CandidateGrade, GraderConfig, GraderEvent, GraderRun, Group
from grading.selectors.grader import group_grading_status
from grading.services.grader_inputs import group_input
from grading.services.grader_runs import grader_config_default, grader_runs_request
from tests.grader.fakes.llm_server import FakeLLMServer, FakeResponse, openai_response
from tests.grading_service.workers import redis_broker, wait_for, worker

pytestmark = [
    pytest.mark.postgres,
    pytest.mark.redis,
    pytest.mark.slow,
    pytest.mark.django_db(transaction=True),
]


@pytest.fixture
def broker() -> Iterator[None]:
    with redis_broker():
        yield


@pytest.fixture
def llm() -> Iterator[FakeLLMServer]:
    server = FakeLLMServer().start()
    try:
        yield server
    finally:
        server.stop()


def request(group: Group, config: GraderConfig) -> GraderRun:
    with transaction.atomic():  # the message is sent on commit
        (run,) = grader_runs_request(groups=[group], config=config)
    return run


def status(run: GraderRun) -> GraderRun:
    run.refresh_from_db()
    return run


def assert_one_clean_transcript(run: GraderRun) -> None:
    seqs = list(GraderEvent.objects.filter(run=run).order_by("seq").values_list("seq", flat=True))
    assert seqs == list(range(run.llm_calls + run.tool_calls))


class _Recording:
    """The heuristic grader, keeping each answer so a fake LLM server can replay it."""

    def __init__(self) -> None:
        self.inner = HeuristicBackend()
        self.name, self.model = "recording", "heuristic"
        self.completions: list[Completion] = []

    def complete(
        self, messages: Sequence[Message], tools: Sequence[ToolSpec], **kw: Any
    ) -> Completion:
        comp = self.inner.complete(messages, tools, **kw)
        self.completions.append(comp)
        return comp


def openai_script(group: Group, seed: int) -> list[dict[str, Any]]:
    """What a model would answer to grade this group well: the heuristic's own moves."""
    rec = _Recording()
    outcome = run_grader(group_input(group_id=group.pk), rec, seed=seed)
    assert outcome.status == "ok", outcome.reason
    return [
        openai_response(
            c.message.content or None,
            [(t.id, t.name, json.dumps(t.arguments)) for t in c.message.tool_calls],
        )
        for c in rec.completions
    ]


def test_it_grades_through_the_grading_queue(
    sample_group: Group, broker: None, tmp_path: Path
) -> None:
    run = request(sample_group, grader_config_default())
    with worker("happy", tmp_path) as w:
        wait_for(lambda: status(run).status == "succeeded", 60, "the run to succeed", w)
    assert run.deliveries == 1 and run.claimed_by.startswith("happy@")
    assert CandidateGrade.objects.filter(run=run).count() == 8
    assert_one_clean_transcript(run)
    assert group_grading_status(group=sample_group, config=run.config).state == "graded"


def test_a_killed_worker_redelivers_and_the_run_completes_once(
    sample_group: Group, broker: None, llm: FakeLLMServer, tmp_path: Path
) -> None:
    script = openai_script(sample_group, seed=0)
    # The first worker's first call hangs; the second worker gets the whole conversation.
    llm.enqueue(FakeResponse(body=script[0], delay_s=120))
    llm.enqueue(*(FakeResponse(body=body) for body in script))
    config = GraderConfig.objects.create(
        name="fake-openai", backend="openai", base_url=f"{llm.url}/v1", model="fake-model"
    )
    run = request(sample_group, config)
    with worker("doomed", tmp_path) as first:
        wait_for(lambda: len(llm.requests) >= 1, 60, "the first LLM call", first)
        assert status(run).status == "running" and run.deliveries == 1
        first.kill()
    assert status(run).status == "running"  # nobody acked, nobody wrote
    with worker("rescuer", tmp_path) as second:
        wait_for(lambda: status(run).status == "succeeded", 90, "the redelivered run", second)
    assert run.deliveries >= 2 and run.claimed_by.startswith("rescuer@")
    assert CandidateGrade.objects.filter(run=run).count() == 8
    assert_one_clean_transcript(run)
    assert run.llm_calls == len(script) and len(llm.requests) == len(script) + 1
    assert run.input_tokens == 11 * len(script)


def test_a_failing_endpoint_is_retried_then_the_group_falls_back(
    sample_group: Group, broker: None, llm: FakeLLMServer, tmp_path: Path
) -> None:
    # Nothing enqueued: the fake server answers every call with HTTP 500.
    config = GraderConfig.objects.create(
        name="fake-openai-down", backend="openai", base_url=f"{llm.url}/v1", model="fake-model"
    )
    run = request(sample_group, config)
    with worker("retrier", tmp_path) as w:
        wait_for(lambda: status(run).status == "failed", 90, "the run to fail", w)
    assert "retries exhausted (2)" in run.failure_reason and "HTTP 500" in run.failure_reason
    assert run.deliveries == 3 and len(llm.requests) == 3  # the first try and two retries
    assert not CandidateGrade.objects.filter(run=run).exists()
    grading = group_grading_status(group=sample_group, config=config)
    assert grading.fallback and "HTTP 500" in grading.reason


def test_an_exception_on_a_worker_ends_the_run_failed_and_the_group_falls_back(
    sample_group: Group, broker: None, llm: FakeLLMServer, tmp_path: Path
) -> None:
    # An answer the client cannot read (a token count that is not a number): a ValueError in
    # the run, not a transient error, so it is not retried.
    body = openai_response("Looking.", [])
    body["usage"] = {"prompt_tokens": "many", "completion_tokens": 1}
    llm.enqueue(FakeResponse(body=body))
    config = GraderConfig.objects.create(
        name="fake-openai-garbled", backend="openai", base_url=f"{llm.url}/v1", model="fake-model"
    )
    run = request(sample_group, config)
    with worker("crasher", tmp_path) as w:
        wait_for(lambda: status(run).status == "failed", 60, "the run to fail", w)
        # The worker lives on and takes the next run.
        nxt = request(sample_group, grader_config_default())
        wait_for(lambda: status(nxt).status == "succeeded", 60, "the next run", w)
    assert run.failure_reason.startswith("ValueError: invalid literal for int()"), run
    assert run.deliveries == 1 and len(llm.requests) == 1
    assert not CandidateGrade.objects.filter(run=run).exists()
    grading = group_grading_status(group=sample_group, config=config)
    assert grading.fallback and "ValueError" in grading.reason
