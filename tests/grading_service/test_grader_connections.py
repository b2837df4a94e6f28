"""With a connection pool (GAGAR_DB_POOL_MAX, the threads-pool worker), a run hands its
database connection back before every model call: 128 runs in threads share a pool of 16, so
one holding its connection across a 2 s call makes the others queue (a turn whose tools read
the database, e.g. a trajectory page, kept it until the next model call had answered)."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connections

from grading.models import GraderConfig, GraderRun, Group
from grading.services.grader_runs import grader_run_execute, grader_runs_request
from tests.grader.fakes.llm_server import FakeLLMServer, FakeResponse, RecordedRequest
from tests.grading_service.test_worker import openai_script

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]


def test_a_run_holds_no_database_connection_while_it_waits_on_the_model(
    sample_group: Group, settings: Any
) -> None:
    settings.GAGAR_DB_POOL_MAX = 4
    script = openai_script(sample_group, seed=0)
    grading_thread = connections["default"]  # this thread's connection, which runs the grader
    held: list[bool] = []

    def answer(request: RecordedRequest) -> FakeResponse:
        if request.method != "POST":
            return FakeResponse(status=404, body={"error": {"message": "no such route"}})
        held.append(grading_thread.connection is not None)
        return FakeResponse(body=script[len(held) - 1])

    server = FakeLLMServer(handler=answer).start()
    try:
        config = GraderConfig.objects.create(
            name="fake-openai-pool", backend="openai", base_url=f"{server.url}/v1", model="m"
        )
        (run,) = grader_runs_request(groups=[sample_group], config=config, enqueue=False)
        grader_run_execute(run_id=run.pk, worker="test")
    finally:
        server.stop()
    run.refresh_from_db()
    assert run.status == GraderRun.Status.SUCCEEDED, run.failure_reason
    assert len(held) == len(script) and not any(held)
