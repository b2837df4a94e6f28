"""Reads for the staff ops page: grader run backlog and grader latency."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import timedelta

from django.db.models import Count
from django.utils import timezone

from grading.models import GraderRun

# Latency is measured over the most recent succeeded runs, at most this many.
LATENCY_SAMPLE = 500


def percentile(sorted_values: Sequence[float], q: float) -> float | None:
    """Linear interpolation between closest ranks (numpy's default); None for no values."""
    if not sorted_values:
        return None
    position = (len(sorted_values) - 1) * q
    low, high = math.floor(position), math.ceil(position)
    if low == high:
        return float(sorted_values[low])
    weight = position - low
    return float(sorted_values[low] * (1 - weight) + sorted_values[high] * weight)


@dataclass(frozen=True)
class GraderLatency:
    runs: int  # how many succeeded runs the figures cover
    p50_s: float | None
    p95_s: float | None
    max_s: float | None


def grader_latency(*, sample: int = LATENCY_SAMPLE) -> GraderLatency:
    recent = (
        GraderRun.objects.filter(status=GraderRun.Status.SUCCEEDED, latency_s__isnull=False)
        .order_by("-finished_at")
        .values_list("latency_s", flat=True)[:sample]
    )
    latencies = sorted(float(value) for value in recent if value is not None)
    return GraderLatency(
        runs=len(latencies),
        p50_s=percentile(latencies, 0.50),
        p95_s=percentile(latencies, 0.95),
        max_s=latencies[-1] if latencies else None,
    )


@dataclass(frozen=True)
class RunBacklog:
    by_status: dict[str, int]  # pending / running only (the partial index serves this)
    stale_running: int  # running with no heartbeat for GAGAR_GRADER_STALE_AFTER_S
    failed_last_24h: int
    succeeded_last_24h: int


def run_backlog(*, stale_after_s: float) -> RunBacklog:
    now = timezone.now()
    active = GraderRun.objects.filter(
        status__in=[GraderRun.Status.PENDING, GraderRun.Status.RUNNING]
    )
    counts = dict(active.values_list("status").annotate(n=Count("id")).order_by())
    stale = active.filter(
        status=GraderRun.Status.RUNNING,
        heartbeat_at__lt=now - timedelta(seconds=stale_after_s),
    ).count()
    recent = dict(
        GraderRun.objects.filter(
            status__in=[GraderRun.Status.SUCCEEDED, GraderRun.Status.FAILED],
            finished_at__gte=now - timedelta(hours=24),
        )
        .values_list("status")
        .annotate(n=Count("id"))
        .order_by()
    )
    return RunBacklog(
        by_status={status: int(counts.get(status, 0)) for status in ("pending", "running")},
        stale_running=stale,
        failed_last_24h=int(recent.get(GraderRun.Status.FAILED, 0)),
        succeeded_last_24h=int(recent.get(GraderRun.Status.SUCCEEDED, 0)),
    )
