"""Store a trajectory as compressed chunks of JSON-lines events, streaming."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from grading.domain.compression import compress
from grading.models import Attempt, Trajectory, TrajectoryChunk

# ~256 KB of JSON per chunk: a page reads one or two chunks; zstd keeps them ~10x smaller.
CHUNK_RAW_BYTES = 256 * 1024
CHUNK_MAX_EVENTS = 500
# Chunks held in memory before a bulk insert.
FLUSH_EVERY = 16


def trajectory_store(
    *, attempt: Attempt, format: str, events: Iterable[dict[str, Any]], content_hash: str
) -> Trajectory:
    trajectory = Trajectory.objects.create(attempt=attempt, format=format, sha256=content_hash)
    pending: list[TrajectoryChunk] = []
    lines: list[bytes] = []
    raw_in_chunk = 0
    first_event = 0
    event_count = 0
    raw_size = 0
    stored_size = 0
    seq = 0

    def close_chunk() -> None:
        nonlocal lines, raw_in_chunk, first_event, seq, stored_size
        data = compress(b"".join(lines))
        stored_size += len(data)
        pending.append(
            TrajectoryChunk(
                trajectory=trajectory,
                seq=seq,
                first_event=first_event,
                event_count=len(lines),
                data=data,
            )
        )
        seq += 1
        first_event += len(lines)
        lines, raw_in_chunk = [], 0
        if len(pending) >= FLUSH_EVERY:
            TrajectoryChunk.objects.bulk_create(pending)
            pending.clear()

    for event in events:
        line = (
            json.dumps(event, ensure_ascii=False, separators=(",", ":")).encode(
                "utf-8", "surrogatepass"
            )
            + b"\n"
        )
        lines.append(line)
        raw_in_chunk += len(line)
        raw_size += len(line)
        event_count += 1
        if raw_in_chunk >= CHUNK_RAW_BYTES or len(lines) >= CHUNK_MAX_EVENTS:
            close_chunk()
    if lines:
        close_chunk()
    if pending:
        TrajectoryChunk.objects.bulk_create(pending)
    trajectory.event_count = event_count
    trajectory.raw_size = raw_size
    trajectory.stored_size = stored_size
    trajectory.save(update_fields=["event_count", "raw_size", "stored_size"])
    return trajectory
