"""Shared fixtures. Services: tests marked `postgres`/`redis` skip when the service is absent,
unless GAGAR_REQUIRE_SERVICES=1 (CI), where a missing service fails them instead."""

from __future__ import annotations

import os
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.conf import settings
from django.core.cache import cache

from tests._env import redis_url

PROJECT_ROOT = Path(__file__).resolve().parent.parent
SHARED_DATA = PROJECT_ROOT.parent / "shared" / "data" / "swebench-groups"
REQUIRE_SERVICES = os.environ.get("GAGAR_REQUIRE_SERVICES") == "1"


def _redis_up() -> bool:
    url = redis_url()
    host_port = url.split("//", 1)[1].split("/", 1)[0]
    host, _, port = host_port.rpartition(":")
    try:
        with socket.create_connection((host or "127.0.0.1", int(port or 6379)), timeout=0.5):
            return True
    except OSError:
        return False


def pytest_runtest_setup(item: pytest.Item) -> None:
    missing = []
    if item.get_closest_marker("postgres") and not settings.DATABASES["default"]["ENGINE"].endswith(
        "postgresql"
    ):
        missing.append("PostgreSQL (set DATABASE_URL=postgres://…)")
    if item.get_closest_marker("redis") and not _redis_up():
        missing.append("Redis at GAGAR_TEST_REDIS_URL")
    if missing:
        reason = "needs " + " and ".join(missing)
        if REQUIRE_SERVICES:
            pytest.fail(f"{reason}; GAGAR_REQUIRE_SERVICES=1 makes this a failure")
        pytest.skip(reason)


@pytest.fixture
def shared_data() -> Path:
    if not SHARED_DATA.is_dir():
        pytest.skip(f"real data not found at {SHARED_DATA}")
    return SHARED_DATA


@pytest.fixture(autouse=True)
def _fresh_cache() -> Iterator[None]:
    """Every test starts with an empty cache: login and API throttle counts, and rendered
    fragments, never carry over from the test before (whose ids a new test may reuse), so no
    test's outcome depends on which tests ran before it in its worker. (The review caches are
    keyed by content; that a warm cache serves what a cold one renders is tested on purpose,
    e.g. tests/security/test_sentinel_blindness.py renders a group cold, then reads it warm.)"""
    cache.clear()
    yield
