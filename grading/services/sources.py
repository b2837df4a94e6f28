"""Open import sources (files, uploads) as record streams for `groups_import`."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import IO

from django.conf import settings

from grading.domain.bundle import BundleReader
from grading.domain.jsonfiles import JsonReader
from grading.domain.records import GroupRecord, ImportProblem


def bundle_records(
    *, stream: IO[bytes], source: str, base_dir: Path | None
) -> tuple[BundleReader, Iterator[GroupRecord | ImportProblem]]:
    reader = BundleReader(
        stream,
        source=source,
        base_dir=base_dir,
        max_line_bytes=settings.GAGAR_MAX_LINE_BYTES,
        max_patch_bytes=settings.GAGAR_MAX_PATCH_BYTES,
    )
    return reader, iter(reader)


def json_reader(*, lenient: bool = False) -> JsonReader:
    """The reader of SWE-bench and reviews files, with this installation's size limits."""
    return JsonReader(
        lenient=lenient,
        max_line_bytes=settings.GAGAR_MAX_LINE_BYTES,
        max_document_bytes=settings.GAGAR_MAX_DOCUMENT_BYTES,
    )
