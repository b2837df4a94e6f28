"""An export directory as one zip, for a download: written to a temporary directory, zipped
into an anonymous temporary file (deleted when closed, so an interrupted download leaves
nothing) and streamed from disk by the response; no file is ever held in memory whole."""

from __future__ import annotations

import tempfile
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

from grading.models import GraderConfig
from grading.services.advantages import AdvantageParams
from grading.services.exports import Format, advantages_export


def directory_zip(*, write: Callable[[Path], Any], prefix: str) -> IO[bytes]:
    """Call `write(directory)`, then return an open, rewound zip of what it wrote."""
    # Not a context manager: the caller streams it and the response closes it.
    archive = tempfile.TemporaryFile(suffix=".zip")  # noqa: SIM115
    try:
        with tempfile.TemporaryDirectory(prefix=prefix) as tmp:
            out = Path(tmp)
            write(out)
            with zipfile.ZipFile(archive, "w", compression=zipfile.ZIP_DEFLATED) as zf:
                for path in sorted(out.iterdir()):
                    zf.write(path, arcname=path.name)
    except BaseException:
        archive.close()
        raise
    archive.seek(0)
    return archive


def advantages_archive(
    *,
    run_name: str,
    step: int | None,
    fmt: Format,
    config: GraderConfig,
    params: AdvantageParams,
) -> IO[bytes]:
    def write(out: Path) -> None:
        advantages_export(
            run_name=run_name, step=step, fmt=fmt, out_dir=out, config=config, params=params
        )

    return directory_zip(write=write, prefix="gagar-advantages-")
