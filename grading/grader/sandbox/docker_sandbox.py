"""Run a check in a throwaway Docker container: no network, non-root, read-only root.

Only the workdir (bind-mounted at /work) and a small tmpfs at /tmp are writable. Every
resource limit is enforced by the engine's cgroups, and the container is always removed.
"""

from __future__ import annotations

import contextlib
import os
import time
from pathlib import Path
from typing import Any

import docker
import docker.errors
import requests

from grading.grader.sandbox.base import CheckResult, Limits, SandboxError
from grading.grader.sandbox.local import hand_over_workdir
from grading.grader.sandbox.output import BoundedOutput

SANDBOX_USER = (65534, 65534)


class DockerSandbox:
    name = "docker"

    def __init__(
        self, image: str, client: Any = None, *, tmp_mb: int = 64, contents: str = ""
    ) -> None:
        self.image = image
        self._client = client
        self.tmp_mb = tmp_mb
        self.contents = contents

    def describe(self) -> str:
        what = self.contents or (
            "its contents are not described (GAGAR_SANDBOX_IMAGE_CONTENTS); do not assume the "
            "repository's dependencies are installed"
        )
        return f"It runs in the Docker image {self.image}: {what}"

    @property
    def client(self) -> Any:
        if self._client is None:
            try:
                self._client = docker.from_env()
            except docker.errors.DockerException as exc:
                raise SandboxError(f"no Docker engine answers: {exc}") from exc
        return self._client

    def run(self, command: str, workdir: Path, limits: Limits) -> CheckResult:
        workdir = Path(workdir).resolve()
        if not workdir.is_dir():
            raise SandboxError(f"workdir {workdir} is not a directory")
        if os.geteuid() == 0:
            # The check runs as nobody; its scratch workdir must be writable by nobody.
            hand_over_workdir(workdir, *SANDBOX_USER)
        started = time.monotonic()
        try:
            container = self.client.containers.create(
                self.image, ["/bin/sh", "-c", command], **self._options(workdir, limits)
            )
        except docker.errors.ImageNotFound as exc:
            raise SandboxError(f"sandbox image {self.image!r} is missing: {exc}") from exc
        except (docker.errors.DockerException, requests.RequestException) as exc:
            raise SandboxError(f"could not create the sandbox container: {exc}") from exc
        try:
            exit_code, timed_out = self._start_and_wait(container, limits.timeout_s)
            output = BoundedOutput(limits.output_bytes)
            for chunk in container.logs(stdout=True, stderr=True, stream=True, follow=False):
                output.feed(chunk)
        except (docker.errors.DockerException, requests.RequestException) as exc:
            raise SandboxError(f"the sandbox container failed: {exc}") from exc
        finally:
            _remove(container)
        return CheckResult(
            command=command,
            exit_code=exit_code,
            output=output.text(),
            truncated=output.truncated,
            timed_out=timed_out,
            duration_s=time.monotonic() - started,
        )

    def _options(self, workdir: Path, limits: Limits) -> dict[str, Any]:
        memory = f"{limits.memory_mb}m"
        return {
            "working_dir": "/work",
            "user": f"{SANDBOX_USER[0]}:{SANDBOX_USER[1]}",
            "environment": {"HOME": "/work", "TMPDIR": "/tmp"},  # noqa: S108 (the container's own tmpfs)
            "network_mode": "none",
            "mem_limit": memory,
            "memswap_limit": memory,  # no swap on top of the memory limit
            "nano_cpus": int(limits.cpus * 1e9),
            "pids_limit": limits.pids,
            "read_only": True,
            "volumes": {str(workdir): {"bind": "/work", "mode": "rw"}},
            "tmpfs": {"/tmp": f"rw,nosuid,nodev,size={self.tmp_mb}m,mode=1777"},  # noqa: S108
            "cap_drop": ["ALL"],
            "security_opt": ["no-new-privileges"],
            "detach": True,
        }

    @staticmethod
    def _start_and_wait(container: Any, timeout_s: float) -> tuple[int, bool]:
        container.start()
        try:
            status = container.wait(timeout=timeout_s)
        except (requests.exceptions.ReadTimeout, requests.exceptions.ConnectionError):
            # The wait's read timed out: the check overran its time.
            container.kill()
            container.wait(timeout=30)
            return -1, True
        return int(status.get("StatusCode", -1)), False


def _remove(container: Any) -> None:
    with contextlib.suppress(docker.errors.NotFound):
        container.remove(force=True)
