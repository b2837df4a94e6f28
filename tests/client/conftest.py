"""The Python client against the real server over HTTP (pytest-django's live server).

Grading happens as a worker does it: `grading_worker` is a thread that claims pending grader
runs and executes them with the same service the Celery task calls (`grader_run_execute`). It
writes while the live server writes, which an in-memory SQLite database cannot do (its
shared-cache tables lock instead of waiting), so tests using it are marked `postgres`.
The end-to-end test uses a real Celery worker process instead (PostgreSQL and Redis).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest
from django.db import connection
from gagar_client import Client

from grading.models import GraderRun
from grading.services.grader_runs import grader_run_execute
from grading.services.tokens import api_token_create
from tests.factories import ServiceAccountFactory


@pytest.fixture
def token(db: None) -> str:
    user = ServiceAccountFactory.create(username="trainer")
    _, secret = api_token_create(user=user, name="loop", scopes=["submit", "read", "export"])
    return secret


@pytest.fixture
def gagar(live_server, token: str) -> Iterator[Client]:
    with Client(live_server.url, token, timeout_s=30) as client:
        yield client


class GradingThread:
    def __init__(self) -> None:
        self.stop = threading.Event()
        self.executed = 0
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._loop, daemon=True)

    def _loop(self) -> None:
        try:
            while not self.stop.is_set():
                ids = list(
                    GraderRun.objects.filter(status=GraderRun.Status.PENDING).values_list(
                        "pk", flat=True
                    )
                )
                for run_id in ids:
                    grader_run_execute(run_id=run_id, worker="test-thread")
                    self.executed += 1
                self.stop.wait(0.05)
        except BaseException as exc:  # surfaced by the fixture
            self.error = exc
        finally:
            connection.close()


@pytest.fixture
def grading_worker(transactional_db: None) -> Iterator[GradingThread]:
    worker = GradingThread()
    worker.thread.start()
    try:
        yield worker
    finally:
        worker.stop.set()
        worker.thread.join(timeout=30)
    if worker.error is not None:
        raise worker.error
