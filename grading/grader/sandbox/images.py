"""A minimal local sandbox image, built without pulling anything from a registry.

It holds a static busybox (sh, coreutils, wget, nc) and nothing else: enough for the sandbox's own
tests and for shell-level checks. Real checks use an image with the project's toolchain.
"""

from __future__ import annotations

import io
import shutil
import subprocess
import tarfile
from pathlib import Path
from typing import Any

import docker.errors

from grading.grader.sandbox.base import SandboxError

BUSYBOX_TAG = "gagar-sandbox-busybox:local"
PASSWD = "root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/work:/bin/sh\n"  # noqa: S105
GROUP = "root:x:0:\nnogroup:x:65534:\n"


def ensure_busybox_image(client: Any, tag: str = BUSYBOX_TAG) -> str:
    """Return `tag`, importing the image first if the engine does not have it."""
    try:
        client.images.get(tag)
        return tag
    except docker.errors.ImageNotFound:
        pass
    repository, _, version = tag.rpartition(":")
    client.api.import_image_from_data(
        busybox_rootfs_tar(), repository=repository or tag, tag=version or "latest"
    )
    return tag


def busybox_rootfs_tar(busybox: str | None = None) -> bytes:
    path = busybox or shutil.which("busybox")
    if path is None:
        raise SandboxError("busybox is not installed (apt-get install -y busybox-static)")
    applets = subprocess.run(
        [path, "--list"], capture_output=True, text=True, check=True
    ).stdout.split()
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        for name, mode in (("bin", 0o755), ("etc", 0o755), ("work", 0o777), ("tmp", 0o1777)):
            _add_dir(tar, name, mode)
        tar.add(Path(path).resolve(), arcname="bin/busybox")
        for applet in applets:
            if applet != "busybox":
                link = tarfile.TarInfo(f"bin/{applet}")
                link.type, link.linkname = tarfile.SYMTYPE, "busybox"
                tar.addfile(link)
        _add_file(tar, "etc/passwd", PASSWD)
        _add_file(tar, "etc/group", GROUP)
    return buffer.getvalue()


def _add_dir(tar: tarfile.TarFile, name: str, mode: int) -> None:
    info = tarfile.TarInfo(name)
    info.type, info.mode = tarfile.DIRTYPE, mode
    tar.addfile(info)


def _add_file(tar: tarfile.TarFile, name: str, text: str) -> None:
    data = text.encode()
    info = tarfile.TarInfo(name)
    info.size, info.mode = len(data), 0o644
    tar.addfile(info, io.BytesIO(data))
