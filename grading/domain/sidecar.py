"""Trajectory files read from disk, streamed so their size never matters."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from grading.domain.records import ImportProblem, ImportProblemError
from grading.domain.trajectories import TrajectoryFormatError, iter_events_from_file


def stream_file_events(
    path: Path, fmt: str, source: str, line: int | None, field: str
) -> Iterator[dict[str, Any]]:
    try:
        for event in iter_events_from_file(path, fmt):
            yield event.to_json()
    except TrajectoryFormatError as exc:
        raise ImportProblemError(ImportProblem(source, line, field, f"{path.name}: {exc}")) from exc


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while chunk := handle.read(1024 * 1024):
            digest.update(chunk)
    return digest.hexdigest()
