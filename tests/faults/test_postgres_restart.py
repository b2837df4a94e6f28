"""PostgreSQL restarted under load: while it is down every request fails cleanly (503, never a
500 page), then gunicorn and the Celery worker recover on their own, without a restart."""

from __future__ import annotations

import json
import threading
import time
from collections import Counter
from pathlib import Path

import httpx
import pytest

from bench.bench_load_reviewers import Reviewer, Tally
from tests.faults.services import (
    PostgresCluster,
    RedisServer,
    celery_worker,
    free_port,
    gunicorn,
    manage,
    service_env,
    wait_until,
)

pytestmark = [pytest.mark.postgres, pytest.mark.redis, pytest.mark.slow]


class Load:
    """Threads requesting pages, readiness and liveness in a loop; outcomes kept per phase."""

    def __init__(self, base: str, reviewers: list[Reviewer]) -> None:
        self.base, self.reviewers = base, reviewers
        self.phase = "up"
        self.seen: Counter[tuple[str, str, int]] = Counter()
        self.stop = threading.Event()
        self.threads = [threading.Thread(target=self._loop, args=(r,)) for r in reviewers]

    def _loop(self, reviewer: Reviewer) -> None:
        probe = httpx.Client(base_url=self.base, timeout=60)
        while not self.stop.is_set():
            for kind, client, url in (
                ("page", reviewer.http, "/review/"),
                ("ready", probe, "/readyz"),
                ("live", probe, "/healthz"),
            ):
                phase = self.phase
                try:
                    status = client.get(url).status_code
                except httpx.HTTPError:
                    status = 0  # no answer at all: counted, and must never happen
                # A request that spanned a change of phase may see either side of it; on a
                # loaded machine one can take seconds. It still must not be a 0 or a 500.
                self.seen[(phase if phase == self.phase else "between", kind, status)] += 1
            time.sleep(0.2)
        probe.close()

    def __enter__(self) -> Load:
        for t in self.threads:
            t.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        for t in self.threads:
            t.join(timeout=120)

    def statuses(self, phase: str, kind: str) -> set[int]:
        return {s for (p, k, s), n in self.seen.items() if p == phase and k == kind and n}


def test_requests_fail_cleanly_then_recover_without_restarts(
    cluster: PostgresCluster, database: str, redis_server: RedisServer, tmp_path: Path
) -> None:
    env = service_env(
        database,
        f"{redis_server.url}/0",
        tmp_path / "var",
        # Persistent connections: the case where a restart leaves every thread a dead one.
        DATABASE_CONN_MAX_AGE="60",
        GAGAR_GRADER_HEARTBEAT_S="0.5",
    )
    setup = json.loads(manage(env, "reviewers", "3"))
    port = free_port()
    web = gunicorn(port, env, tmp_path)
    worker = celery_worker("pg-worker", env, tmp_path)
    base = f"http://127.0.0.1:{port}"
    tally = Tally()
    reviewers = [Reviewer(base, user, pw, tally) for user, pw in setup["reviewers"]]
    try:
        assert all(r.login() for r in reviewers), tally.errors
        with Load(base, reviewers) as load:
            time.sleep(2)
            # "down" only once the server is gone: a request started while it shuts down may
            # still be answered (CI saw one page and one readiness check at 200 there).
            load.phase = "stopping"
            cluster.stop("fast")
            load.phase = "down"
            time.sleep(5)
            down_post = reviewers[0].http.post(
                "/review/a/1/events",
                json={"events": []},
                headers={"Accept": "application/json", "X-CSRFToken": reviewers[0].csrf},
            )
            load.phase = "restarting"
            cluster.start()
            wait_until(
                lambda: all(r.http.get("/review/").status_code == 200 for r in reviewers),
                60,
                "pages to answer again",
            )
            load.phase = "after"
            time.sleep(3)
        # The worker, started before the outage, grades new work without a restart.
        seeded = json.loads(manage(env, "seed", "1"))
        wait_until(
            lambda: json.loads(manage(env, "status"))["runs"][0]["status"] == "succeeded",
            120,
            "the worker to grade after the restart",
        )
        assert web.alive() and worker.alive(), (web.output(), worker.output())
    finally:
        worker.stop()
        web.stop()
        cluster.ensure_running()

    assert load.statuses("up", "page") == {200}
    assert load.statuses("down", "page") == {503}, load.seen
    assert load.statuses("down", "ready") == {503}, load.seen
    assert load.statuses("down", "live") == {200}, load.seen
    assert down_post.status_code == 503 and down_post.json()["ok"] is False
    assert down_post.headers["Retry-After"]
    for kind in ("page", "ready", "live"):
        assert load.statuses("after", kind) == {200}, load.seen
    assert not any(s in (0, 500) for (_, _, s) in load.seen), load.seen
    assert len(seeded["runs"]) == 1
