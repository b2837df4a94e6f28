"""A worker SIGKILLed mid-run, twice in a row, on the same group: the group is graded exactly once
(one set of grades, one clean transcript, no duplicated events) — with today's prefork worker and
with a threads pool on a connection pool (GAGAR_DB_POOL_MAX), the step-scale design."""

from __future__ import annotations

from collections.abc import Iterator
from functools import partial
from pathlib import Path

import pytest

from gagar_site.celery import app
from grading.models import CandidateGrade, GraderConfig, GraderEvent, Group
from tests.faults.services import RedisServer
from tests.grader.fakes.llm_server import FakeLLMServer, FakeResponse
from tests.grading_service.conftest import (  # noqa: F401 - fixtures
    grader_settings,
    sample_group,
    sample_repo_template,
)
from tests.grading_service.test_worker import (  # noqa: F401 - fixtures and helpers
    assert_one_clean_transcript,
    llm,
    openai_script,
    request,
    status,
)
from tests.grading_service.workers import VISIBILITY_TIMEOUT_S, _reset_pools, wait_for, worker

pytestmark = [
    pytest.mark.postgres,
    pytest.mark.redis,
    pytest.mark.slow,
    pytest.mark.django_db(transaction=True),
]


def _calls_reached(llm: FakeLLMServer, n: int) -> bool:  # noqa: F811
    return len(llm.requests) >= n


@pytest.fixture
def own_broker(redis_server: RedisServer) -> Iterator[str]:
    """This process's Celery app on a Redis of the test's own: no other suite's worker (on the
    shared Redis) can take or drop our messages."""
    url = f"{redis_server.url}/0"
    saved = (app.conf.broker_url, app.conf.broker_transport_options)
    app.conf.update(
        broker_url=url, broker_transport_options={"visibility_timeout": VISIBILITY_TIMEOUT_S}
    )
    _reset_pools()
    try:
        yield url
    finally:
        app.conf.update(broker_url=saved[0], broker_transport_options=saved[1])
        _reset_pools()


POOLS = {"prefork": {}, "threads": {"GAGAR_DB_POOL_MAX": "4"}}


@pytest.mark.parametrize("pool", sorted(POOLS))
def test_two_workers_killed_mid_run_leave_one_set_of_grades(
    sample_group: Group,  # noqa: F811
    own_broker: str,
    llm: FakeLLMServer,  # noqa: F811
    tmp_path: Path,
    pool: str,
) -> None:
    env = {"CELERY_BROKER_URL": own_broker, **POOLS[pool]}
    script = openai_script(sample_group, seed=0)
    # The first two deliveries hang in their first LLM call (and are killed there); the third
    # gets the whole conversation.
    llm.enqueue(
        FakeResponse(body=script[0], delay_s=300), FakeResponse(body=script[0], delay_s=300)
    )
    llm.enqueue(*(FakeResponse(body=body) for body in script))
    config = GraderConfig.objects.create(
        name="fake-openai-killed", backend="openai", base_url=f"{llm.url}/v1", model="fake-model"
    )
    run = request(sample_group, config)
    for n, name in enumerate(("doomed-1", "doomed-2"), start=1):
        with worker(name, tmp_path, pool=pool, **env) as w:
            wait_for(partial(_calls_reached, llm, n), 90, f"LLM call {n}", w)
            assert status(run).status == "running" and run.claimed_by.startswith(f"{name}@")
            w.kill()
        assert status(run).status == "running"  # nobody acked, nobody wrote a verdict
        assert not CandidateGrade.objects.filter(run=run).exists()
    with worker("survivor", tmp_path, pool=pool, **env) as w:
        wait_for(lambda: status(run).status == "succeeded", 120, "the third delivery", w)

    assert run.deliveries == 3 and run.claimed_by.startswith("survivor@")
    grades = CandidateGrade.objects.filter(run=run)
    assert grades.count() == 8
    assert grades.values("attempt").distinct().count() == 8
    assert_one_clean_transcript(run)
    assert GraderEvent.objects.filter(run=run).count() == run.llm_calls + run.tool_calls
    assert run.llm_calls == len(script) and len(llm.requests) == len(script) + 2


def test_a_worker_killed_between_transcript_batches_loses_no_spend_and_no_run(
    sample_group: Group,  # noqa: F811
    own_broker: str,
    llm: FakeLLMServer,  # noqa: F811
    tmp_path: Path,
) -> None:
    """The transcript is written one batch per model call (a turn's tool calls go with the
    next call's event). Killed in its fourth call, the doomed delivery has written its three
    calls and the tool calls of the turns before them, not the last turn's; the next delivery
    starts afresh, and what the three calls cost stays on the run."""
    env = {"CELERY_BROKER_URL": own_broker, **POOLS["threads"]}
    script = openai_script(sample_group, seed=0)
    assert len(script) > 4
    llm.enqueue(*(FakeResponse(body=body) for body in script[:3]))
    llm.enqueue(FakeResponse(body=script[3], delay_s=300))
    llm.enqueue(*(FakeResponse(body=body) for body in script))
    config = GraderConfig.objects.create(
        name="fake-openai-killed-batches",
        backend="openai",
        base_url=f"{llm.url}/v1",
        model="fake-model",
    )
    run = request(sample_group, config)
    with worker("doomed", tmp_path, pool="threads", **env) as w:
        wait_for(partial(_calls_reached, llm, 4), 90, "LLM call 4", w)
        events = list(GraderEvent.objects.filter(run=run).order_by("seq"))
        w.kill()
    kinds = [e.kind for e in events]
    assert kinds.count("llm_call") == 3 and kinds[-1] == "llm_call"
    # Contiguous from 0: every batch went whole, in order.
    assert [e.seq for e in events] == list(range(len(events)))
    spent = sum(e.input_tokens for e in events if e.kind == "llm_call")
    assert spent == 3 * 11  # the fake reports 11 prompt tokens per call
    with worker("survivor", tmp_path, pool="threads", **env) as w:
        wait_for(lambda: status(run).status == "succeeded", 120, "the second delivery", w)
    assert run.deliveries == 2
    assert_one_clean_transcript(run)
    assert run.llm_calls == len(script)
    assert run.abandoned_input_tokens == spent
    assert CandidateGrade.objects.filter(run=run).count() == 8
