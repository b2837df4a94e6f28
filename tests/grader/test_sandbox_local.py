from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from grading.grader.sandbox.base import Limits, SandboxError
from grading.grader.sandbox.local import LocalSandbox, available_isolation
from grading.grader.sandbox.output import BoundedOutput


def _isolation_works() -> str:
    try:
        return available_isolation(LocalSandbox().run_as)
    except SandboxError as exc:
        return f"unavailable: {exc}"


ISOLATION = _isolation_works()
pytestmark = pytest.mark.skipif(ISOLATION.startswith("unavailable"), reason=ISOLATION)


@pytest.fixture
def workdir() -> Iterator[Path]:
    # Not pytest's tmp_path: its parent is private to root, out of reach of the sandbox user.
    path = Path(tempfile.mkdtemp(prefix="gagar-sandbox-test-"))
    path.chmod(0o755)
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def listener() -> Iterator[int]:
    server = socket.create_server(("127.0.0.1", 0))
    server.listen(8)
    try:
        yield server.getsockname()[1]
    finally:
        server.close()


SANDBOX = LocalSandbox()
QUICK = Limits(timeout_s=10, memory_mb=256, pids=64, output_bytes=4096)


def test_it_runs_a_command_and_captures_interleaved_output(workdir):
    (workdir / "a.txt").write_text("hello\n")
    result = SANDBOX.run("cat a.txt; echo oops >&2; echo made > b.txt; exit 3", workdir, QUICK)

    assert result.exit_code == 3
    assert result.output == "hello\noops\n"
    assert (workdir / "b.txt").read_text() == "made\n"
    assert not result.truncated
    assert not result.timed_out
    assert result.command.startswith("cat a.txt")


def test_it_cannot_reach_the_network(workdir, listener):
    connect = f"exec 3<>/dev/tcp/127.0.0.1/{listener} && echo connected"
    outside = subprocess.run(["bash", "-c", connect], capture_output=True, text=True, check=False)
    assert outside.stdout.strip() == "connected"

    result = SANDBOX.run(f"bash -c '{connect}'", workdir, QUICK)
    assert result.exit_code != 0
    assert "connected" not in result.output.replace("not connected", "")


def test_it_gets_none_of_the_hosts_environment(workdir, monkeypatch):
    monkeypatch.setenv("GAGAR_GRADER_API_KEY", "secret-value")
    result = SANDBOX.run("env", workdir, QUICK)
    assert "secret-value" not in result.output


def test_it_stops_an_infinite_loop_and_its_children_at_the_timeout(workdir):
    # A sleep of this test's own length: another test run on the machine may sleep 60 too.
    sleep = f"sleep 60.{os.getpid()}{time.monotonic_ns() % 1000:03d}"
    started = time.monotonic()
    result = SANDBOX.run(f"{sleep} & while :; do :; done", workdir, Limits(timeout_s=1, pids=64))
    assert result.timed_out
    assert result.exit_code == -1
    assert time.monotonic() - started < 10
    leftovers = subprocess.run(["pgrep", "-f", f"^{sleep}$"], capture_output=True, check=False)
    assert leftovers.stdout == b""


def test_it_stops_a_fork_bomb_at_the_process_limit(workdir):
    # Bounded, so a broken limit cannot take the machine down with the test.
    bomb = "i=0; while [ $i -lt 300 ]; do sleep 30 & i=$((i+1)); done; echo spawned $i"
    result = SANDBOX.run(bomb, workdir, Limits(timeout_s=5, pids=20, output_bytes=100_000))

    assert "spawned 300" not in result.output
    assert "fork" in result.output.lower() or "resource temporarily unavailable" in (
        result.output.lower()
    )


def test_it_stops_a_memory_hog(workdir):
    hog = "python3 -c 'b = bytearray(600 * 1024 * 1024); print(\"allocated\")'"
    result = SANDBOX.run(hog, workdir, Limits(timeout_s=10, memory_mb=200))

    assert result.exit_code != 0
    assert "allocated" not in result.output
    assert "MemoryError" in result.output


def test_it_truncates_long_output_keeping_head_and_tail(workdir):
    script = "echo START; i=0; while [ $i -lt 5000 ]; do echo line $i; i=$((i+1)); done; echo END"
    result = SANDBOX.run(script, workdir, Limits(timeout_s=10, output_bytes=1000))

    assert result.truncated
    assert result.output.startswith("START\n")
    assert result.output.endswith("END\n")
    assert "bytes of output cut" in result.output
    assert len(result.output.encode()) < 1200


def test_bounded_output_keeps_everything_under_the_limit():
    output = BoundedOutput(10)
    for chunk in (b"abc", b"def", b"ghij"):
        output.feed(chunk)
    assert (output.text(), output.truncated) == ("abcdefghij", False)
    output.feed(b"k")
    assert output.truncated
    assert output.text().startswith("abcde\n[... 1 bytes")
    assert output.text().endswith("ghijk")
