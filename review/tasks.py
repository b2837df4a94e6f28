"""Celery tasks of the review side: interfaces only (ids in, one service call)."""

from __future__ import annotations

from celery import shared_task

from review.analytics.snapshots import snapshot_compute, snapshots_refresh
from review.task_names import COMPUTE_SNAPSHOT, REFRESH_SNAPSHOTS


# Time limits stay far below the broker's visibility timeout (hours) so a killed worker's
# message is redelivered only after the claim has gone stale.
@shared_task(
    name=COMPUTE_SNAPSHOT,
    acks_late=True,
    reject_on_worker_lost=True,
    soft_time_limit=15 * 60,
    time_limit=16 * 60,
)
def compute_snapshot_task(snapshot_id: int) -> bool:
    return snapshot_compute(snapshot_id=snapshot_id)


@shared_task(name=REFRESH_SNAPSHOTS, acks_late=True)
def refresh_snapshots_task() -> int:
    return snapshots_refresh()
