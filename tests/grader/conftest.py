from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from tests.grader.fakes.llm_server import FakeLLMServer


@pytest.fixture
def llm_server() -> Iterator[FakeLLMServer]:
    server = FakeLLMServer().start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def http_client() -> Iterator[httpx.Client]:
    # trust_env=False: a proxy set in the environment must never see test traffic.
    with httpx.Client(trust_env=False) as client:
        yield client


class SleepRecorder:
    """Stands in for time.sleep so retry waits are asserted, not spent."""

    def __init__(self) -> None:
        self.waits: list[float] = []

    def __call__(self, seconds: float) -> None:
        self.waits.append(seconds)


@pytest.fixture
def sleeps() -> SleepRecorder:
    return SleepRecorder()
