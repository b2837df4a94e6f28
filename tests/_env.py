"""Loaded with `-p tests._env` before pytest-django reads the settings (in every xdist worker too).

Settings refuse to start without a SECRET_KEY outside debug; tests get a throwaway one.

Redis: every test that talks to Redis takes its database from `redis_url()`, never a fixed number,
so parallel workers (pytest-xdist) never share a queue or a key. GAGAR_TEST_REDIS_URL names the
highest database the run may use; each worker takes a block of REDIS_DBS_PER_WORKER databases
below it (gw0 the top block), and the tests' second and third databases (a Celery broker, the ops
page's check) come from the same block.
"""

from __future__ import annotations

import os

os.environ.setdefault("SECRET_KEY", "tests-only-secret-key-not-for-production")
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")

DEFAULT_REDIS_URL = "redis://127.0.0.1:6379/15"
REDIS_DBS_PER_WORKER = 3


def _worker_index() -> int:
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")  # "gw0", "gw1", … in xdist workers
    return int(worker.removeprefix("gw")) if worker.startswith("gw") else 0


def redis_url(slot: int = 0) -> str:
    """This worker's Redis database number `slot` (0 = the main one, 1 and 2 = spares)."""
    if not 0 <= slot < REDIS_DBS_PER_WORKER:
        raise ValueError(f"a worker has {REDIS_DBS_PER_WORKER} Redis databases, not {slot + 1}")
    url = os.environ.get("GAGAR_TEST_REDIS_URL", DEFAULT_REDIS_URL)
    server, _, top = url.rpartition("/")
    db = int(top or 0) - REDIS_DBS_PER_WORKER * _worker_index() - slot
    if db < 0:
        raise RuntimeError(
            f"GAGAR_TEST_REDIS_URL={url} leaves too few Redis databases for worker "
            f"{_worker_index()}: use a higher database number or fewer workers (-n)"
        )
    return f"{server}/{db}"
