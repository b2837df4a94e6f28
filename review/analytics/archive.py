"""Package an export directory as one zip for a browser download."""

from __future__ import annotations

import tempfile
import zipfile
from pathlib import Path
from typing import IO

from grading.services.exports import Format
from review.analytics.exports import labels_export
from review.analytics.filters import Filters
from review.analytics.package import package_export


def export_archive(*, what: str, fmt: Format, filters: Filters) -> IO[bytes]:
    """Write the export to a temporary directory and return an open, rewound zip of it.

    The returned file is anonymous (deleted when closed), so an interrupted download leaves
    nothing behind; files are added to the zip from disk, never held in memory whole.
    """
    # Not a context manager: the caller streams it and the response closes it.
    archive = tempfile.TemporaryFile(suffix=".zip")  # noqa: SIM115
    with tempfile.TemporaryDirectory(prefix=f"gagar-{what}-") as tmp:
        out = Path(tmp)
        if what == "labels":
            labels_export(fmt=fmt, out_dir=out, filters=filters)
        else:
            package_export(fmt=fmt, out_dir=out, filters=filters)
        with zipfile.ZipFile(archive, "w", compression=zipfile.ZIP_DEFLATED) as zf:
            for path in sorted(out.iterdir()):
                zf.write(path, arcname=path.name)
    archive.seek(0)
    return archive
