"""Fixtures of the fault suite: a PostgreSQL cluster and Redis servers of its own.

The cluster is started once per session and migrated once into a template database; each test
gets a fresh copy (CREATE DATABASE … TEMPLATE), so a test's restarts and leftovers stay its own.
"""

from __future__ import annotations

import itertools
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.faults.services import PostgresCluster, RedisServer, manage, service_env

_numbers = itertools.count()


@pytest.fixture(scope="session")
def cluster() -> Iterator[PostgresCluster]:
    # Not under pytest's tmp_path: the `postgres` user must be able to reach the folder.
    base = Path(tempfile.mkdtemp(prefix="gagar-faults-pg-"))
    base.chmod(0o755)
    pg = PostgresCluster(base / "cluster").init()
    pg.start()
    try:
        pg.create_database("base")
        manage(service_env(pg.url("base"), "memory://", base / "var"), "migrate")
        yield pg
    finally:
        pg.destroy()
        shutil.rmtree(base, ignore_errors=True)


@pytest.fixture
def database(cluster: PostgresCluster) -> str:
    return cluster.create_database(f"t{next(_numbers)}", template="base")


@pytest.fixture
def redis_server(tmp_path: Path) -> Iterator[RedisServer]:
    server = RedisServer(tmp_path).start()
    try:
        yield server
    finally:
        server.kill()
