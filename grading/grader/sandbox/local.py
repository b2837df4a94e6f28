"""Run a check on this machine without network, under rlimits and a wall-clock timeout.

Network isolation comes from a fresh network namespace (`unshare --net`, else `bwrap
--unshare-net`); if neither works the sandbox refuses to run rather than run with network.
It does not isolate the filesystem: use DockerSandbox where checks are not trusted at all.

Run as root, the check drops to an unprivileged user (nobody by default): the kernel ignores
RLIMIT_NPROC for root, so a fork bomb would otherwise go unchecked. The workdir — the check's
scratch copy — is then handed to that user, and must be reachable by it.
"""

from __future__ import annotations

import contextlib
import functools
import math
import os
import resource
import shutil
import signal
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import IO, Literal

from grading.grader.sandbox.base import CheckResult, Limits, SandboxError
from grading.grader.sandbox.output import BoundedOutput

Isolation = Literal["unshare", "bwrap"]
NOBODY = (65534, 65534)
SAFE_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


class LocalSandbox:
    name = "local"

    def __init__(self, *, run_as: tuple[int, int] | None = NOBODY, max_file_mb: int = 256) -> None:
        # Only root can switch users; anyone else runs checks as themselves.
        self.run_as = run_as if os.geteuid() == 0 else None
        self.max_file_mb = max_file_mb

    def describe(self) -> str:
        return f"It runs on the grading host itself: {host_toolchain()}"

    def run(self, command: str, workdir: Path, limits: Limits) -> CheckResult:
        workdir = Path(workdir).resolve()
        if not workdir.is_dir():
            raise SandboxError(f"workdir {workdir} is not a directory")
        isolation = available_isolation(self.run_as)
        if self.run_as is not None:
            hand_over_workdir(workdir, *self.run_as)
        argv = [*_isolation_prefix(isolation, workdir), "/bin/sh", "-c", command]
        started = time.monotonic()
        try:
            proc = self._spawn(argv, workdir, limits)
        except OSError as exc:
            raise SandboxError(
                f"cannot start the check in {workdir}: {exc}; "
                f"the sandbox user {self.run_as} must be able to reach it"
            ) from exc
        output = BoundedOutput(limits.output_bytes)
        assert proc.stdout is not None
        reader = threading.Thread(target=_drain, args=(proc.stdout, output), daemon=True)
        reader.start()
        timed_out = False
        try:
            proc.wait(timeout=limits.timeout_s)
        except subprocess.TimeoutExpired:
            timed_out = True
        finally:
            # Also ends background jobs the check left behind after a normal exit.
            _kill_group(proc.pid)
            proc.wait()
        reader.join(timeout=5)
        proc.stdout.close()
        return CheckResult(
            command=command,
            exit_code=-1 if timed_out else _exit_code(proc.returncode),
            output=output.text(),
            truncated=output.truncated,
            timed_out=timed_out,
            duration_s=time.monotonic() - started,
        )

    def _spawn(self, argv: list[str], workdir: Path, limits: Limits) -> subprocess.Popen[bytes]:
        return subprocess.Popen(
            argv,
            cwd=workdir,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,  # one pipe: stdout and stderr stay interleaved
            # The host environment may hold secrets (API keys); the check gets none of it.
            env={
                "PATH": SAFE_PATH,
                "HOME": str(workdir),
                "LANG": "C.UTF-8",
                "TMPDIR": str(workdir),
            },
            start_new_session=True,  # its own process group, killed as a whole
            user=self.run_as[0] if self.run_as else None,
            group=self.run_as[1] if self.run_as else None,
            extra_groups=[] if self.run_as else None,
            preexec_fn=_rlimits(limits, self.max_file_mb),
        )


@functools.cache
def available_isolation(run_as: tuple[int, int] | None) -> Isolation:
    """The first network-isolation tool that works here for this user, probed once."""
    problems = []
    for isolation in ("unshare", "bwrap"):
        argv = [*_isolation_prefix(isolation, Path("/")), "/bin/true"]
        if shutil.which(argv[0]) is None:
            problems.append(f"{argv[0]} is not installed")
            continue
        probe = subprocess.run(
            argv,
            capture_output=True,
            text=True,
            timeout=20,
            check=False,
            user=run_as[0] if run_as else None,
            group=run_as[1] if run_as else None,
            extra_groups=[] if run_as else None,
        )
        if probe.returncode == 0:
            return isolation
        problems.append(f"{' '.join(argv)} failed: {probe.stderr.strip()[:200]}")
    raise SandboxError(
        "no network isolation available, refusing to run a check with network access: "
        + "; ".join(problems)
        + ". Install util-linux (unshare) or bubblewrap and allow unprivileged user namespaces."
    )


@functools.cache
def host_toolchain() -> str:
    """The interpreters and tools a local check finds on PATH, probed once per process."""
    found = []
    for tool, flag in (("python3", "--version"), ("git", "--version")):
        path = shutil.which(tool, path=SAFE_PATH)
        if path is None:
            continue
        probe = subprocess.run([path, flag], capture_output=True, text=True, check=False)
        found.append((probe.stdout or probe.stderr).strip().splitlines()[0][:60])
    pytest = False
    if shutil.which("python3", path=SAFE_PATH):
        check = subprocess.run(
            ["python3", "-c", "import pytest"],
            capture_output=True,
            check=False,
            env={"PATH": SAFE_PATH},
        )
        pytest = check.returncode == 0
    tools = ", ".join(found) or "no Python"
    return (
        f"{tools}; pytest {'installed' if pytest else 'not installed'}. The repository's own "
        "dependencies are only there if the host has them installed; a check that needs one "
        "will fail with ImportError, which says nothing about the candidate."
    )


def _isolation_prefix(isolation: Isolation, workdir: Path) -> list[str]:
    if isolation == "unshare":
        # A new user namespace lets an unprivileged user create the network namespace.
        return ["unshare", "--net", "--map-root-user", "--"]
    bind_root = ["--dev-bind", "/", "/"]
    return [
        "bwrap",
        "--unshare-net",
        "--die-with-parent",
        *bind_root,
        "--chdir",
        str(workdir),
        "--",
    ]


def _rlimits(limits: Limits, max_file_mb: int) -> Callable[[], None]:
    mib = 1024 * 1024
    # CPU time is a backstop; the wall-clock timeout is what normally stops a check.
    cpu_s = math.ceil(limits.timeout_s * max(limits.cpus, 1.0)) + 1
    settings = [
        (resource.RLIMIT_CPU, cpu_s),
        (resource.RLIMIT_AS, limits.memory_mb * mib),
        (resource.RLIMIT_NPROC, limits.pids),
        (resource.RLIMIT_FSIZE, max_file_mb * mib),
        (resource.RLIMIT_CORE, 0),
    ]

    def apply() -> None:  # runs in the child between fork and exec
        for which, value in settings:
            resource.setrlimit(which, (value, value))

    return apply


def hand_over_workdir(workdir: Path, uid: int, gid: int) -> None:
    for root, dirs, files in os.walk(workdir):
        for name in [*dirs, *files]:
            os.lchown(Path(root) / name, uid, gid)
    os.chown(workdir, uid, gid)


def _drain(stream: IO[bytes], output: BoundedOutput) -> None:
    # Keep reading past the limit so a chatty check never blocks on a full pipe.
    while chunk := stream.read1(65536):  # type: ignore[attr-defined]
        output.feed(chunk)


def _kill_group(pgid: int) -> None:
    # Already gone is fine.
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


def _exit_code(returncode: int) -> int:
    # Report a death by signal the way a shell does (128 + signal), so it is never negative.
    return 128 - returncode if returncode < 0 else returncode
