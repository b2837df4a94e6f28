"""Real Celery worker processes for the grader tests, on Redis and the test PostgreSQL database."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import quote

import redis
from django.db import connection

from gagar_site.celery import app
from tests._env import redis_url

PROJECT_ROOT = Path(__file__).resolve().parents[2]
# A Redis database of its own, so these tests never see another suite's messages.
BROKER_URL = redis_url(1)
VISIBILITY_TIMEOUT_S = 8

WORKER_ENV = {
    "CELERY_BROKER_URL": BROKER_URL,
    "CELERY_VISIBILITY_TIMEOUT": str(VISIBILITY_TIMEOUT_S),
    "CELERY_UNACKED_RESTORE_INTERVAL_S": "1",
    "CELERY_UNACKED_RESTORE_THROTTLE": "1",
    # Sweeping every second, a worker is sometimes killed holding the sweep's lock; the next
    # worker must not wait out kombu's 300 s for it.
    "CELERY_UNACKED_MUTEX_EXPIRE_S": "3",
    "GAGAR_GRADER_SOFT_TIME_LIMIT_S": "5",
    "GAGAR_GRADER_TIME_LIMIT_S": "7",
    "GAGAR_GRADER_HEARTBEAT_S": "0.5",
    "GAGAR_GRADER_STALE_AFTER_S": "2",
    "GAGAR_GRADER_TASK_MAX_RETRIES": "2",
    "GAGAR_GRADER_RETRY_BACKOFF_S": "1",
    # Celery retries whole runs here; the HTTP client makes one attempt per run.
    "GAGAR_GRADER_MAX_RETRIES": "0",
    "GAGAR_GRADER_TIMEOUT_S": "30",
    "GAGAR_GRADER_API_KEY": "test-key",
    "GAGAR_SANDBOX": "none",
    "NO_PROXY": "127.0.0.1,localhost",
}


def test_database_url() -> str:
    s = connection.settings_dict
    auth = quote(s["USER"] or "postgres")
    if s.get("PASSWORD"):
        auth += ":" + quote(s["PASSWORD"])
    return f"postgres://{auth}@{s['HOST'] or '127.0.0.1'}:{s['PORT'] or 5432}/{s['NAME']}"


@contextmanager
def redis_broker() -> Iterator[None]:
    """Point this process's Celery app at the test Redis database, emptied before and after."""
    client = redis.Redis.from_url(BROKER_URL)
    client.flushdb()
    saved = (app.conf.broker_url, app.conf.broker_transport_options)
    app.conf.update(
        broker_url=BROKER_URL,
        broker_transport_options={"visibility_timeout": VISIBILITY_TIMEOUT_S},
    )
    _reset_pools()
    try:
        yield
    finally:
        app.conf.update(broker_url=saved[0], broker_transport_options=saved[1])
        _reset_pools()
        client.flushdb()
        client.close()


def _reset_pools() -> None:
    # The app caches its connection and producer pools on first use.
    setattr(app, "_pool", None)  # noqa: B010
    setattr(app.amqp, "_producer_pool", None)  # noqa: B010


class Worker:
    def __init__(
        self, name: str, log_dir: Path, extra_env: Mapping[str, str], pool: str = "prefork"
    ) -> None:
        env = {
            k: v for k, v in os.environ.items() if k.lower() not in ("http_proxy", "https_proxy")
        }
        env.update(WORKER_ENV)
        env.update(extra_env)
        env["DATABASE_URL"] = test_database_url()
        self.log = log_dir / f"worker-{name}.log"
        self._log_file = self.log.open("wb")
        self.proc = subprocess.Popen(
            [
                str(PROJECT_ROOT / ".venv" / "bin" / "celery"),
                "-A",
                "gagar_site",
                "worker",
                "-Q",
                "grading",
                "-c",
                "1" if pool == "prefork" else "4",
                "-P",
                pool,
                "-n",
                f"{name}@%h",
                "--without-mingle",
                "--without-gossip",
                "-l",
                "INFO",
            ],
            cwd=PROJECT_ROOT,
            env=env,
            stdout=self._log_file,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own process group: SIGKILL reaches the pool child too
        )

    def kill(self) -> None:
        """SIGKILL the worker and its pool processes: nothing gets to ack or clean up."""
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait(timeout=10)

    def stop(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.kill()
        self._log_file.close()

    def output(self) -> str:
        return self.log.read_text(errors="replace")[-4000:]


@contextmanager
def worker(
    name: str, log_dir: Path, *, pool: str = "prefork", **extra_env: str
) -> Iterator[Worker]:
    w = Worker(name, log_dir, extra_env, pool)
    try:
        yield w
    finally:
        w.stop()


def wait_for(
    predicate: Callable[[], Any], timeout_s: float, what: str, log: Worker | None = None
) -> Any:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.1)
    detail = f"\n--- worker log ---\n{log.output()}" if log is not None else ""
    raise AssertionError(f"timed out after {timeout_s}s waiting for {what}{detail}")
