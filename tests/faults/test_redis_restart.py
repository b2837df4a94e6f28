"""Redis restarted (without persistence: every queued message lost) while groups are queued and
being graded by real Celery workers: every group still ends graded or explicitly failed, once.

The database is the source of truth: the reaper (run here explicitly, as beat would) re-sends
runs still pending after the resend period and returns silent running ones to pending.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from tests.faults.services import (
    PostgresCluster,
    RedisServer,
    celery_worker,
    manage,
    service_env,
    wait_until,
)

pytestmark = [pytest.mark.postgres, pytest.mark.redis, pytest.mark.slow]

# Enough that many are still queued when Redis dies: a heuristic run takes a fraction of a
# second, while noticing the first one started takes a `manage.py status` process (~1-2 s), in
# which two workers can finish a handful (with 8 groups, CI once saw only one left pending).
GROUPS = 32
PASSING = 8  # valid passing attempts of the sample group: one grade each
FAST_RECOVERY = {
    "CELERY_VISIBILITY_TIMEOUT": "30",
    "GAGAR_GRADER_SOFT_TIME_LIMIT_S": "20",
    "GAGAR_GRADER_TIME_LIMIT_S": "25",
    "GAGAR_GRADER_HEARTBEAT_S": "0.5",
    "GAGAR_GRADER_STALE_AFTER_S": "5",
    "GAGAR_GRADER_PENDING_RESEND_S": "3",
}


def _status(env: dict[str, str]) -> dict:
    return json.loads(manage(env, "status"))


def _finished(env: dict[str, str]) -> bool:
    runs = _status(env)["runs"]
    return all(r["status"] in ("succeeded", "failed") for r in runs)


def test_a_redis_restart_loses_no_group(
    cluster: PostgresCluster, database: str, redis_server: RedisServer, tmp_path: Path
) -> None:
    env = service_env(database, f"{redis_server.url}/0", tmp_path / "var", **FAST_RECOVERY)
    seeded = json.loads(manage(env, "seed", str(GROUPS)))
    assert len(seeded["runs"]) == GROUPS
    workers = [celery_worker(f"w{n}", env, tmp_path) for n in range(2)]
    try:
        # Some runs graded or running, the rest still queued in Redis: now lose Redis.
        wait_until(
            lambda: any(r["status"] != "pending" for r in _status(env)["runs"]),
            120,
            "a worker to start grading",
        )
        redis_server.kill()
        before = {r["pk"]: r["status"] for r in _status(env)["runs"]}
        assert list(before.values()).count("pending") >= 2, before  # messages really were lost
        time.sleep(2)
        redis_server.start()

        # The reaper, as beat would run it: re-send what the database says is unfinished.
        deadline = time.monotonic() + 300
        while not _finished(env):
            assert time.monotonic() < deadline, (_status(env), [w.output() for w in workers])
            assert all(w.alive() for w in workers), [w.output() for w in workers]
            manage(env, "reap")
            time.sleep(3)
    finally:
        for w in workers:
            w.stop()

    final = _status(env)
    assert len(final["runs"]) == GROUPS
    for run in final["runs"]:
        if run["status"] == "succeeded":
            assert final["grades"].get(str(run["pk"])) == PASSING, run
        else:
            assert run["status"] == "failed" and run["failure_reason"], run
    assert final["duplicate_grades"] == 0 and final["duplicate_events"] == 0
