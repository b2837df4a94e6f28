"""The load generator of bench/bench_load_reviewers.py, short: 10 reviewers for 10 seconds
against gunicorn on loopback, then every acknowledged write looked up in the database."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.bench_load_reviewers import loopback_only, run_load, summary, write_problems
from tests.faults.services import PostgresCluster, free_port, gunicorn, manage, service_env

pytestmark = [pytest.mark.postgres, pytest.mark.slow]

REVIEWERS, SECONDS = 10, 10.0


def test_the_load_generator_refuses_any_host_but_loopback() -> None:
    for url in ("http://localhost:8000", "http://10.0.0.1:80", "https://127.0.0.1:8000"):
        with pytest.raises(SystemExit):
            loopback_only(url)
    assert loopback_only("http://127.0.0.1:8000/") == "http://127.0.0.1:8000"


def test_concurrent_reviewers_lose_and_duplicate_nothing(
    cluster: PostgresCluster, database: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    env = service_env(database, "memory://", tmp_path / "var", DATABASE_CONN_MAX_AGE="60")
    setup = json.loads(manage(env, "reviewers", str(REVIEWERS)))
    port = free_port()
    web = gunicorn(port, env, tmp_path)
    try:
        tally = run_load(f"http://127.0.0.1:{port}", setup["campaign"], setup["reviewers"], SECONDS)
    finally:
        web.stop()
    with capsys.disabled():
        print(f"\n{REVIEWERS} reviewers × {SECONDS:.0f} s: {summary(tally, SECONDS)}")
    assert not tally.errors, tally.errors[:10]
    assert not write_problems(tally, json.loads(manage(env, "writes")))
    assert len(tally.submitted) == REVIEWERS and tally.fixes and tally.notes
