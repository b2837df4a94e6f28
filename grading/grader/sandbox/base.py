"""The interface of a sandbox that runs one grader check: no network, bounded resources."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Protocol


@dataclass(frozen=True)
class Limits:
    timeout_s: float = 60.0
    memory_mb: int = 1024
    cpus: float = 1.0
    pids: int = 256
    output_bytes: int = 64 * 1024  # stdout+stderr kept, the rest is cut and marked


@dataclass(frozen=True)
class CheckResult:
    command: str
    exit_code: int  # -1 when killed by the timeout
    output: str  # stdout and stderr interleaved, truncated to Limits.output_bytes
    truncated: bool
    timed_out: bool
    duration_s: float


class SandboxError(Exception):
    """The sandbox itself could not run (engine down, image missing) — not a failing check."""


class Sandbox(Protocol):
    name: str

    def describe(self) -> str:
        """What a check finds inside (interpreters, tools, limits), for the run_check spec."""
        ...

    def run(self, command: str, workdir: Path, limits: Limits) -> CheckResult:
        """Run `command` with `workdir` mounted writable as the working directory."""
        ...
