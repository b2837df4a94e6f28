"""Throwaway Redis and PostgreSQL servers of the fault tests' own, so that killing and restarting
them disturbs no other test and none of the machine's shared services; plus the web and worker
processes pointed at them."""

from __future__ import annotations

import contextlib
import glob
import os
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, NoReturn

import pytest

from tests.conftest import PROJECT_ROOT, REQUIRE_SERVICES

VENV_BIN = PROJECT_ROOT / ".venv" / "bin"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_until(predicate: Callable[[], Any], timeout_s: float, what: str) -> Any:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.2)
    raise AssertionError(f"timed out after {timeout_s}s waiting for {what}")


def _port_open(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return True
    except OSError:
        return False


def missing(binary: str, hint: str) -> NoReturn:
    reason = f"needs {binary} ({hint})"
    if REQUIRE_SERVICES:
        pytest.fail(f"{reason}; GAGAR_REQUIRE_SERVICES=1 makes this a failure")
    pytest.skip(reason)


class RedisServer:
    """`redis-server` without persistence: a restart loses every queued message."""

    def __init__(self, log_dir: Path) -> None:
        self.binary: str = shutil.which("redis-server") or missing(
            "redis-server", "apt redis-server"
        )
        self.port = free_port()
        self.log = log_dir / f"redis-{self.port}.log"
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}"

    def start(self) -> RedisServer:
        cmd = [str(self.binary), "--port", str(self.port), "--bind", "127.0.0.1"]
        cmd += ["--save", "", "--appendonly", "no", "--daemonize", "no"]
        with self.log.open("ab") as log:
            self.proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)
        wait_until(lambda: _port_open(self.port), 30, "redis-server to listen")
        return self

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=10)
        wait_until(lambda: not _port_open(self.port), 10, "redis-server to be gone")

    def restart(self) -> None:
        self.kill()
        self.start()


class PostgresCluster:
    """A cluster of our own in a temporary folder (initdb refuses root: run as `postgres`)."""

    def __init__(self, base: Path) -> None:
        found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
        if not found:
            missing("PostgreSQL server binaries", "apt postgresql")
        self.bin = Path(found[-1]).parent
        self.port = free_port()
        self.base = base
        self.data = base / "pgdata"
        self.log = base / "postgres.log"

    def _as_postgres(self, *args: str) -> list[str]:
        if os.geteuid() == 0:
            return ["runuser", "-u", "postgres", "--", *args]
        return list(args)

    def _run(self, *args: str) -> None:
        subprocess.run(self._as_postgres(*args), check=True, capture_output=True, timeout=120)

    def init(self) -> PostgresCluster:
        self.base.mkdir(parents=True, exist_ok=True)
        if os.geteuid() == 0:
            shutil.chown(self.base, "postgres", "postgres")
        self._run(str(self.bin / "initdb"), "-D", str(self.data), "-U", "postgres", "-A", "trust")
        return self

    def start(self) -> None:
        options = (
            f"-p {self.port} -c listen_addresses=127.0.0.1 -c unix_socket_directories={self.base}"
        )
        options += " -c fsync=off -c max_connections=200"
        self._run(
            str(self.bin / "pg_ctl"), "-D", str(self.data), "-l", str(self.log), "-o", options,
            "-w", "-t", "60", "start",
        )  # fmt: skip

    def stop(self, mode: str = "fast") -> None:
        # `fast` ends every session at once: what clients of a crashed or restarted server see.
        self._run(str(self.bin / "pg_ctl"), "-D", str(self.data), "-m", mode, "-w", "stop")

    def ensure_running(self) -> None:
        """After a test that stopped the cluster failed midway: the next test needs it."""
        state = subprocess.run(
            self._as_postgres(str(self.bin / "pg_ctl"), "-D", str(self.data), "status"),
            capture_output=True,
            timeout=60,
        )
        if state.returncode != 0:
            self.start()

    def url(self, database: str) -> str:
        return f"postgres://postgres@127.0.0.1:{self.port}/{database}"

    def create_database(self, name: str, template: str = "template1") -> str:
        import psycopg

        with psycopg.connect(self.url("postgres"), autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}" TEMPLATE "{template}"')
        return self.url(name)

    def destroy(self) -> None:
        with contextlib.suppress(subprocess.CalledProcessError):
            self.stop("immediate")
        shutil.rmtree(self.base, ignore_errors=True)


def service_env(database_url: str, broker_url: str, var_dir: Path, **extra: str) -> dict[str, str]:
    """The environment of every process of one fault test: its own database, broker, var dir."""
    env = {k: v for k, v in os.environ.items() if k.lower() not in ("http_proxy", "https_proxy")}
    env.update(
        DATABASE_URL=database_url,
        CELERY_BROKER_URL=broker_url,
        GAGAR_VAR_DIR=str(var_dir),
        GAGAR_SANDBOX="none",
        NO_PROXY="127.0.0.1,localhost",
        PYTHONPATH=str(PROJECT_ROOT),
    )
    env.pop("CACHE_URL", None)
    env.pop("REDIS_URL", None)
    env.update(extra)
    return env


class Process:
    """A subprocess in its own process group (a SIGKILL reaches a worker's pool children too)."""

    def __init__(self, name: str, cmd: list[str], env: Mapping[str, str], log_dir: Path) -> None:
        self.name = name
        self.log = log_dir / f"{name}.log"
        self._log_file = self.log.open("ab")
        self.proc = subprocess.Popen(
            cmd,
            cwd=PROJECT_ROOT,
            env=dict(env),
            stdout=self._log_file,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )

    def alive(self) -> bool:
        return self.proc.poll() is None

    def kill(self) -> None:
        if self.alive():
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait(timeout=10)

    def stop(self) -> None:
        if self.alive():
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.kill()
        self._log_file.close()

    def output(self) -> str:
        return self.log.read_text(errors="replace")[-4000:]


def celery_worker(name: str, env: Mapping[str, str], log_dir: Path) -> Process:
    cmd = [str(VENV_BIN / "celery"), "-A", "gagar_site", "worker", "-Q", "grading", "-c", "1"]
    cmd += ["-n", f"{name}@%h", "--without-mingle", "--without-gossip", "-l", "INFO"]
    return Process(name, cmd, env, log_dir)


def gunicorn(port: int, env: Mapping[str, str], log_dir: Path) -> Process:
    cmd = [str(VENV_BIN / "gunicorn"), "-c", str(PROJECT_ROOT / "deploy" / "gunicorn.conf.py")]
    cmd += ["gagar_site.wsgi"]
    full = {**env, "GUNICORN_BIND": f"127.0.0.1:{port}", "GUNICORN_MAX_REQUESTS": "0"}
    process = Process("gunicorn", cmd, full, log_dir)
    wait_until(lambda: _port_open(port) or not process.alive(), 60, "gunicorn to listen")
    assert process.alive(), process.output()
    return process


def manage(env: Mapping[str, str], *args: str, timeout_s: float = 300) -> str:
    done = subprocess.run(
        [str(VENV_BIN / "python"), "-m", "tests.faults.driver", *args],
        cwd=PROJECT_ROOT,
        env=dict(env),
        capture_output=True,
        text=True,
        timeout=timeout_s,
    )
    assert done.returncode == 0, f"driver {args} failed:\n{done.stdout}\n{done.stderr[-4000:]}"
    return done.stdout.strip().splitlines()[-1] if done.stdout.strip() else ""
