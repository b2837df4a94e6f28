"""Package a labels or data-package export as one zip for a download."""

from __future__ import annotations

from pathlib import Path
from typing import IO

from grading.models import GraderConfig
from grading.services.archives import directory_zip
from grading.services.exports import Format
from review.analytics.exports import labels_export
from review.analytics.filters import Filters
from review.analytics.package import package_export


def export_archive(
    *, what: str, fmt: Format, filters: Filters, config: GraderConfig | None = None
) -> IO[bytes]:
    """Write the export to a temporary directory and return an open, rewound zip of it."""

    def write(out: Path) -> None:
        if what == "labels":
            labels_export(fmt=fmt, out_dir=out, filters=filters, config=config)
        else:
            package_export(fmt=fmt, out_dir=out, filters=filters)

    return directory_zip(write=write, prefix=f"gagar-{what}-")
