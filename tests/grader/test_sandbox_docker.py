from __future__ import annotations

import os
import shutil
import socket
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from grading.grader.sandbox.base import Limits
from grading.grader.sandbox.docker_sandbox import DockerSandbox
from grading.grader.sandbox.images import ensure_busybox_image

pytestmark = pytest.mark.docker


def _engine() -> tuple[Any, str]:
    try:
        import docker

        client = docker.from_env(timeout=30)
        client.ping()
    except Exception as exc:
        return (
            None,
            f"no Docker engine answers ({exc}); start dockerd or unset GAGAR_REQUIRE_DOCKER",
        )
    return client, ""


@pytest.fixture(scope="module")
def sandbox() -> DockerSandbox:
    client, problem = _engine()
    if client is None:
        if os.environ.get("GAGAR_REQUIRE_DOCKER") == "1":
            pytest.fail(problem)
        pytest.skip(problem)
    return DockerSandbox(ensure_busybox_image(client), client)


@pytest.fixture
def workdir() -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(prefix="gagar-docker-test-"))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


QUICK = Limits(timeout_s=20, memory_mb=64, pids=32, output_bytes=4096)


def _containers(sandbox: DockerSandbox) -> int:
    return len(sandbox.client.containers.list(all=True, filters={"ancestor": sandbox.image}))


def test_it_runs_a_command_and_captures_output_and_exit_code(sandbox, workdir):
    (workdir / "a.txt").write_text("hello\n")
    before = _containers(sandbox)
    result = sandbox.run("cat a.txt; echo oops >&2; exit 4", workdir, QUICK)

    assert result.exit_code == 4
    assert "hello" in result.output and "oops" in result.output
    assert not result.timed_out
    assert _containers(sandbox) == before  # removed after the run


def test_it_runs_as_nobody_with_a_read_only_root(sandbox, workdir):
    result = sandbox.run(
        "id -u; touch /oops && echo root-writable; echo ok > /work/out.txt && echo work-writable;"
        " touch /tmp/x && echo tmp-writable",
        workdir,
        QUICK,
    )
    # stdout and stderr come back interleaved by the engine, not always in write order.
    lines = result.output.splitlines()
    assert "65534" in lines
    assert "root-writable" not in lines
    assert "work-writable" in lines
    assert "tmp-writable" in lines
    assert (workdir / "out.txt").read_text() == "ok\n"


def test_it_cannot_reach_the_network(sandbox, workdir):
    server = socket.create_server(("0.0.0.0", 0))
    port = server.getsockname()[1]
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=2):
            pass  # reachable from outside the sandbox
        result = sandbox.run(
            f"nc -w 2 127.0.0.1 {port} </dev/null && echo connected;"
            f" wget -T 2 -q -O- http://127.0.0.1:{port}/ && echo fetched; ip addr",
            workdir,
            QUICK,
        )
    finally:
        server.close()
    assert "connected" not in result.output.split()
    assert "fetched" not in result.output.split()
    assert "eth0" not in result.output


def test_it_kills_an_infinite_loop_at_the_timeout(sandbox, workdir):
    before = _containers(sandbox)
    result = sandbox.run("while :; do :; done", workdir, Limits(timeout_s=2))
    assert result.timed_out
    assert result.exit_code == -1
    assert _containers(sandbox) == before


def test_it_stops_a_fork_bomb_at_the_pid_limit(sandbox, workdir):
    bomb = "i=0; while [ $i -lt 300 ]; do sleep 30 & i=$((i+1)); done; echo spawned $i"
    result = sandbox.run(bomb, workdir, Limits(timeout_s=10, pids=20, output_bytes=100_000))
    assert "spawned 300" not in result.output


def test_it_stops_a_memory_hog(sandbox, workdir):
    hog = "s=$(head -c 300000000 /dev/zero | tr '\\0' x); echo got ${#s}"
    result = sandbox.run(hog, workdir, Limits(timeout_s=30, memory_mb=64))
    assert "got 300000000" not in result.output
    assert result.exit_code != 0 or result.timed_out


def test_it_truncates_long_output(sandbox, workdir):
    script = "echo START; i=0; while [ $i -lt 5000 ]; do echo line $i; i=$((i+1)); done; echo END"
    result = sandbox.run(script, workdir, Limits(timeout_s=20, output_bytes=1000))
    assert result.truncated
    assert result.output.startswith("START\n")
    assert result.output.endswith("END\n")
    assert "bytes of output cut" in result.output
