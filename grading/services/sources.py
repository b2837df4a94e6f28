"""Open import sources (files, uploads) as record streams for `groups_import`."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import IO

from django.conf import settings

from grading.domain.bundle import BundleReader
from grading.domain.jsonfiles import JsonReader
from grading.domain.records import GroupRecord, ImportNote, ImportProblem
from grading.domain.swebench import SystemSource, read_groups


def bundle_records(
    *, stream: IO[bytes], source: str, base_dir: Path | None
) -> tuple[BundleReader, Iterator[GroupRecord | ImportProblem]]:
    reader = BundleReader(
        stream,
        source=source,
        base_dir=base_dir,
        max_line_bytes=settings.GAGAR_MAX_LINE_BYTES,
        max_patch_bytes=settings.GAGAR_MAX_PATCH_BYTES,
        max_test_output_bytes=settings.GAGAR_MAX_TEST_OUTPUT_BYTES,
    )
    return reader, iter(reader)


def json_reader(*, lenient: bool = False) -> JsonReader:
    """The reader of SWE-bench and reviews files, with this installation's size limits."""
    return JsonReader(
        lenient=lenient,
        max_line_bytes=settings.GAGAR_MAX_LINE_BYTES,
        max_document_bytes=settings.GAGAR_MAX_DOCUMENT_BYTES,
    )


def swebench_records(
    *,
    tasks_path: Path,
    systems: list[SystemSource],
    run: str,
    step: int,
    lenient: bool,
    notes: Iterable[ImportNote],
) -> Iterator[GroupRecord | ImportProblem | ImportNote]:
    return read_groups(
        tasks_path=tasks_path,
        systems=systems,
        run=run,
        step=step,
        reader=json_reader(lenient=lenient),
        notes=notes,
        max_test_output_bytes=settings.GAGAR_MAX_TEST_OUTPUT_BYTES,
    )
