"""Cached dashboard statistics: request (pages), compute (Celery), refresh (beat).

A page never computes: it reads the snapshot for its filters and, when there is none or the data
changed since it was computed (`data_fingerprint`), asks for a computation and shows what it has
("computing…" or the previous numbers with their time). The worker claims the row with a
conditional UPDATE, computes outside any transaction, and writes only if it still holds the claim.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import partial
from typing import Any

from celery import current_app
from django.db import models, transaction
from django.db.models import Q
from django.utils import timezone

from grading.models import (
    Attempt,
    CandidateGrade,
    DataVersion,
    GraderConfig,
    GraderRun,
    Group,
    GroupAdvantages,
    Patch,
    Run,
    Step,
    Task,
)
from review.analytics.filters import Filters, SnapshotParams
from review.models import (
    Assignment,
    Campaign,
    CampaignGroup,
    Candidate,
    ClaimMark,
    FixRequest,
    Label,
)
from review.models.analytics import StatsSnapshot
from review.task_names import COMPUTE_SNAPSHOT

log = logging.getLogger(__name__)
Status = StatsSnapshot.Status
# A claimed computation silent this long is presumed dead (worker lost) and may be claimed again.
STALE_CLAIM = timedelta(minutes=20)
# A pending snapshot whose message may have been lost is re-sent after this long.
RESEND_AFTER = timedelta(minutes=5)
REFRESH_RECENT = 20

# What the statistics read (review.analytics.frame, sentinels and filters): a write to any of
# these calls `grading.services.data_version.data_changed`, or cached numbers go stale unseen.
# tests/analytics/test_data_version.py checks the frame reads nothing else and finds writers of
# these that do not call it. Campaign reviewers are left out: no statistic reads them.
STATS_MODELS: frozenset[type[models.Model]] = frozenset(
    {
        Attempt,
        Group,
        Patch,
        Run,
        Step,
        Task,
        CandidateGrade,
        GraderRun,
        GraderConfig,
        GroupAdvantages,
        Campaign,
        CampaignGroup,
        Assignment,
        Candidate,
        Label,
        FixRequest,
        ClaimMark,
    }
)


def data_fingerprint() -> str:
    """The version of everything the statistics read (one query): the data version's token and
    counter, which every writer of `STATS_MODELS` moves (grading.services.data_version)."""
    row = DataVersion.objects.filter(pk=1).values_list("token", "n").first()
    # No row yet (a flushed database): a stamp of its own, never equal to a counted one.
    return "none" if row is None else f"{row[0]}:{row[1]}"


def _enqueue(snapshot_id: int) -> None:
    # By name: review.tasks imports this module (review/task_names.py).
    current_app.tasks[COMPUTE_SNAPSHOT].apply_async(kwargs={"snapshot_id": snapshot_id})


def snapshot_request(*, params: SnapshotParams, now: datetime | None = None) -> StatsSnapshot:
    """Create the snapshot or send it back to pending; enqueue once per transition."""
    now = now or timezone.now()
    with transaction.atomic():
        snap, created = StatsSnapshot.objects.get_or_create(
            params_hash=params.key,
            defaults={"kind": params.kind, "params": params.as_json(), "requested_at": now},
        )
        changed = created
        if not created:
            # Only finished snapshots, lost messages and dead claims move; a live claim stays.
            changed = bool(
                StatsSnapshot.objects.filter(pk=snap.pk)
                .filter(
                    Q(status__in=[Status.READY, Status.FAILED])
                    | Q(status=Status.PENDING, requested_at__lt=now - RESEND_AFTER)
                    | Q(status=Status.COMPUTING, started_at__lt=now - STALE_CLAIM)
                )
                .update(status=Status.PENDING, requested_at=now)
            )
            snap.refresh_from_db()
        if changed:
            transaction.on_commit(partial(_enqueue, snap.pk), robust=True)
    return snap


@dataclass(frozen=True)
class SnapshotState:
    snapshot: StatsSnapshot | None
    fresh: bool  # computed on the current data
    computing: bool  # a computation is queued or running


def snapshot_for_page(*, params: SnapshotParams) -> SnapshotState:
    """What a page shows; requests a computation when missing or out of date (never waits)."""
    found = StatsSnapshot.objects.filter(params_hash=params.key).first()
    fresh = (
        found is not None and found.payload is not None and found.fingerprint == data_fingerprint()
    )
    # Idempotent: enqueues only on a transition (new, finished, lost message, dead claim).
    snap = found if found is not None and fresh else snapshot_request(params=params)
    return SnapshotState(snap, fresh, snap.status in (Status.PENDING, Status.COMPUTING))


def snapshot_payload(*, params: SnapshotParams) -> dict[str, Any] | None:
    """The stored payload for these parameters, if any (for CSV downloads)."""
    snap = StatsSnapshot.objects.filter(params_hash=params.key).only("payload").first()
    return snap.payload if snap is not None else None


def _compute(params: dict[str, Any]) -> dict[str, Any]:
    # Imported here: the computation modules pull in numpy, pandas and scikit-learn.
    if params["kind"] == StatsSnapshot.Kind.AUDIT:
        from review.analytics.audit import audit_payload

        return audit_payload(params=params)
    from review.analytics.agreement_dashboard import agreement_payload
    from review.analytics.frame import load_frame

    filters = Filters(**params["filters"])
    return agreement_payload(
        load_frame(filters), filters=filters.as_json(), n_resamples=params["n_resamples"]
    )


def snapshot_compute(*, snapshot_id: int, now: datetime | None = None) -> bool:
    """Claim, compute and store one snapshot; False when another worker holds it or it is gone."""
    now = now or timezone.now()
    claimed = (
        StatsSnapshot.objects.filter(pk=snapshot_id)
        .filter(
            Q(status=Status.PENDING) | Q(status=Status.COMPUTING, started_at__lt=now - STALE_CLAIM)
        )
        .update(status=Status.COMPUTING, started_at=now)
    )
    if not claimed:
        return False
    snap = StatsSnapshot.objects.get(pk=snapshot_id)
    # Stamp the data version before reading it: a change during the computation makes the
    # result look stale, so the next view recomputes rather than trusting it.
    fingerprint = data_fingerprint()
    started = time.monotonic()
    try:
        payload = _compute(snap.params)
    except Exception as exc:
        log.exception("snapshot %s failed", snapshot_id)
        StatsSnapshot.objects.filter(
            pk=snapshot_id, status=Status.COMPUTING, started_at=now
        ).update(status=Status.FAILED, error=f"{type(exc).__name__}: {exc}"[:2000])
        raise
    written = StatsSnapshot.objects.filter(
        pk=snapshot_id, status=Status.COMPUTING, started_at=now
    ).update(
        status=Status.READY,
        payload=payload,
        fingerprint=fingerprint,
        computed_at=timezone.now(),
        duration_s=time.monotonic() - started,
        error="",
    )
    return bool(written)


def snapshots_refresh() -> int:
    """Periodic: keep the default dashboard and the most recently requested ones up to date."""
    default = SnapshotParams(kind=StatsSnapshot.Kind.AGREEMENT, filters=Filters().as_json())
    keys = {default.key: default}
    for params in StatsSnapshot.objects.order_by("-requested_at").values_list("params", flat=True)[
        :REFRESH_RECENT
    ]:
        p = SnapshotParams(**params)
        keys.setdefault(p.key, p)
    fingerprint = data_fingerprint()
    existing = dict(
        StatsSnapshot.objects.filter(params_hash__in=list(keys)).values_list(
            "params_hash", "fingerprint"
        )
    )
    sent = 0
    for key, params in keys.items():
        if existing.get(key) != fingerprint:
            snapshot_request(params=params)
            sent += 1
    return sent
