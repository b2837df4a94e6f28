"""Active time per candidate and per group, computed on the server from activity events.

The browser reports what it sees (which candidate has focus, tab hidden, user idle) and sends a
heartbeat every few seconds while the reviewer is active. The server never trusts client
clocks: each event closes the interval since the previous event, and that interval counts as
active time (for the assignment, and for the candidate that had focus) only if the previous
state was active and the gap is at most `IDLE_LIMIT`. A gap longer than that means the tab was
closed, the machine slept or heartbeats stopped: none of it counts. A reload just continues
the same state machine, so time survives reloads.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import F
from django.utils import timezone

from review.models import ActivityEvent, Assignment, Candidate

IDLE_LIMIT = timedelta(seconds=settings.GAGAR_REVIEW_IDLE_SECONDS)
ACTIVE_KINDS = {ActivityEvent.Kind.FOCUS, ActivityEvent.Kind.HEARTBEAT}
MAX_EVENTS_PER_CALL = 50


def _advance(assignment: Assignment, now: datetime) -> None:
    """Credit the interval since the last event, then move the clock (caller saves)."""
    last = assignment.last_event_at
    if last is not None and assignment.focus_active and now > last:
        gap = now - last
        if gap <= IDLE_LIMIT:
            ms = int(gap.total_seconds() * 1000)
            assignment.active_ms += ms
            if assignment.focus_candidate_id is not None:
                Candidate.objects.filter(pk=assignment.focus_candidate_id).update(
                    active_ms=F("active_ms") + ms
                )
    if last is None or now > last:
        assignment.last_event_at = now


def _locked(assignment_id: int) -> Assignment:
    return Assignment.objects.select_for_update().select_related("campaign").get(pk=assignment_id)


def assignment_clock_advance(*, assignment_id: int, now: datetime) -> Assignment:
    """Bring the active time up to `now` (inside the caller's transaction)."""
    assignment = _locked(assignment_id)
    _advance(assignment, now)
    assignment.save(update_fields=["active_ms", "last_event_at"])
    return assignment


def review_events_record(
    *,
    assignment: Assignment,
    events: Iterable[Mapping[str, object]],
    now: datetime | None = None,
) -> Assignment:
    """Apply a batch of `{"kind": ..., "candidate": token|None}` events arriving at `now`.

    Unknown kinds and tokens of other assignments are ignored (not errors: a stale tab may send
    them). A submitted assignment stops counting.
    """
    moment = now or timezone.now()
    with transaction.atomic():
        locked = _locked(assignment.pk)
        if locked.status != Assignment.Status.IN_PROGRESS:
            return locked
        tokens = dict(locked.candidates.values_list("token", "pk"))
        rows = []
        for event in list(events)[:MAX_EVENTS_PER_CALL]:
            kind = event.get("kind")
            if kind not in ActivityEvent.Kind.values:
                continue
            token = event.get("candidate")
            candidate_id = tokens.get(token) if isinstance(token, str) else None
            _advance(locked, moment)
            locked.focus_active = kind in ACTIVE_KINDS
            if locked.focus_active:
                locked.focus_candidate_id = candidate_id
            rows.append(
                ActivityEvent(assignment=locked, candidate_id=candidate_id, kind=kind, at=moment)
            )
        ActivityEvent.objects.bulk_create(rows)
        # Activity keeps the lease alive: only a truly abandoned assignment expires.
        locked.expires_at = moment + timedelta(minutes=locked.campaign.lease_minutes)
        locked.save(
            update_fields=[
                "active_ms",
                "last_event_at",
                "focus_active",
                "focus_candidate",
                "expires_at",
            ]
        )
    return locked
