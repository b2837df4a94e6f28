"""Probes of the services the site depends on: the database, the Celery broker, migrations.

Used by `/readyz` (is this process ready for traffic?) and by the staff ops page (how deep are
the queues?). Every probe is short and bounded by a timeout: a readiness check that hangs is
worse than one that fails.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db import connections
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.migrations.loader import MigrationLoader

# Celery's queues, in the order the ops page lists them.
QUEUES = ("grading", "default")
# kombu's Redis transport keeps one list per priority step: `queue`, then `queue\x06\x16<n>`.
_REDIS_PRIORITY_SEP = "\x06\x16"
_REDIS_PRIORITY_STEPS = (0, 3, 6, 9)
_PROBE_TIMEOUT_S = 2.0

# Once a process has seen every migration applied it stays so until it is replaced by a newer
# deploy (a new process), so the migration graph is loaded once, not on every probe.
_migrations_seen_applied = False


@dataclass(frozen=True)
class Probe:
    name: str
    ok: bool
    detail: str = ""


def broker_kind(url: str | None = None) -> str:
    url = settings.CELERY_BROKER_URL if url is None else url
    scheme = url.split("://", 1)[0].lower()
    if scheme in ("redis", "rediss"):
        return "redis"
    if scheme == "filesystem":
        return "filesystem"
    return scheme


def _redis_client(url: str) -> Any:
    import redis

    return redis.Redis.from_url(
        url, socket_timeout=_PROBE_TIMEOUT_S, socket_connect_timeout=_PROBE_TIMEOUT_S
    )


def probe_database(connection: BaseDatabaseWrapper) -> Probe:
    name = f"database:{connection.alias}"
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
            cursor.fetchone()
    except Exception as exc:
        # A broken connection must not poison the next probe: drop it so the next one reconnects.
        # Closing a dead connection may fail too; there is nothing more to do then.
        with contextlib.suppress(Exception):
            connection.close()
        return Probe(name, False, f"{type(exc).__name__}: {exc}".strip())
    return Probe(name, True)


def probe_migrations(connection: BaseDatabaseWrapper) -> Probe:
    global _migrations_seen_applied
    if _migrations_seen_applied:
        return Probe("migrations", True)
    try:
        loader = MigrationLoader(connection, ignore_no_migrations=True)
    except Exception as exc:
        return Probe("migrations", False, f"{type(exc).__name__}: {exc}")
    # Every node of the graph, not `migration_plan(leaf_nodes)`: that plan is empty when the
    # leaves are recorded even if an earlier migration is not (an inconsistent history).
    applied = loader.applied_migrations or {}
    unapplied = sorted(node for node in loader.graph.nodes if node not in applied)
    if unapplied:
        pending = ", ".join(f"{app}.{name}" for app, name in unapplied[:5])
        more = f" (+{len(unapplied) - 5} more)" if len(unapplied) > 5 else ""
        return Probe("migrations", False, f"{len(unapplied)} unapplied: {pending}{more}")
    _migrations_seen_applied = True
    return Probe("migrations", True)


def _filesystem_folders() -> list[Path]:
    options = settings.CELERY_BROKER_TRANSPORT_OPTIONS
    keys = ("data_folder_in", "data_folder_out", "control_folder", "processed_folder")
    return sorted({Path(str(options[key])) for key in keys if options.get(key)})


def probe_broker() -> Probe:
    url = settings.CELERY_BROKER_URL
    kind = broker_kind(url)
    if kind == "redis":
        try:
            _redis_client(url).ping()
        except Exception as exc:
            return Probe("broker", False, f"redis: {type(exc).__name__}: {exc}")
        return Probe("broker", True, "redis")
    if kind == "filesystem":
        for folder in _filesystem_folders():
            if not folder.is_dir() or not os.access(folder, os.W_OK | os.X_OK):
                return Probe("broker", False, f"filesystem: {folder} is not a writable folder")
        return Probe("broker", True, "filesystem")
    # memory:// (tests) and transports we do not know how to probe cheaply.
    return Probe("broker", True, f"{kind}: not probed")


def readiness(databases: Iterable[BaseDatabaseWrapper] | None = None) -> list[Probe]:
    """Every probe, in order: each configured database, migrations (default database), broker."""
    conns = list(connections.all() if databases is None else databases)
    probes = [probe_database(conn) for conn in conns]
    default = next((conn for conn in conns if conn.alias == "default"), None)
    if default is not None and all(p.ok for p in probes):
        probes.append(probe_migrations(default))
    probes.append(probe_broker())
    return probes


@dataclass(frozen=True)
class QueueDepth:
    queue: str
    waiting: int | None  # None: the broker could not be asked
    detail: str = ""


def queue_depths() -> tuple[list[QueueDepth], int | None]:
    """Messages waiting per Celery queue, and messages delivered but not yet acknowledged
    (running or prefetched; Redis only). Never raises: an unreachable broker shows as unknown."""
    url = settings.CELERY_BROKER_URL
    kind = broker_kind(url)
    if kind == "redis":
        try:
            client = _redis_client(url)
            with client.pipeline() as pipe:
                for queue in QUEUES:
                    for step in _REDIS_PRIORITY_STEPS:
                        pipe.llen(queue if step == 0 else f"{queue}{_REDIS_PRIORITY_SEP}{step}")
                pipe.hlen("unacked")
                sizes = pipe.execute()
        except Exception as exc:
            reason = f"{type(exc).__name__}: {exc}"
            return [QueueDepth(queue, None, reason) for queue in QUEUES], None
        per_queue = len(_REDIS_PRIORITY_STEPS)
        depths = [
            QueueDepth(queue, sum(int(n) for n in sizes[i * per_queue : (i + 1) * per_queue]))
            for i, queue in enumerate(QUEUES)
        ]
        return depths, int(sizes[-1])
    if kind == "filesystem":
        folder = Path(str(settings.CELERY_BROKER_TRANSPORT_OPTIONS.get("data_folder_in", "")))
        try:
            names = [entry.name for entry in os.scandir(folder)]
        except OSError as exc:
            return [QueueDepth(queue, None, str(exc)) for queue in QUEUES], None
        # Messages are files named `<ms>_<uuid>.<queue>.msg`.
        return [
            QueueDepth(queue, sum(1 for n in names if n.endswith(f".{queue}.msg")))
            for queue in QUEUES
        ], None
    return [QueueDepth(queue, None, f"{kind} broker: not measured") for queue in QUEUES], None
