"""Active time is computed on the server from events; hidden and idle time do not count."""

from datetime import timedelta

import pytest
from django.utils import timezone

from review.models import ActivityEvent, Candidate
from review.services.queue import assignment_next
from review.services.reviewing import fix_request_create, review_submit
from review.services.timing import review_events_record

pytestmark = pytest.mark.django_db


@pytest.fixture
def assignment(campaign, reviewer):
    return assignment_next(campaign=campaign, reviewer=reviewer)


def _at(t0, seconds):
    return t0 + timedelta(seconds=seconds)


def _send(assignment, t0, seconds, kind, candidate=None):
    token = candidate.token if candidate else None
    return review_events_record(
        assignment=assignment, events=[{"kind": kind, "candidate": token}], now=_at(t0, seconds)
    )


def test_it_counts_heartbeats_on_the_focused_candidate(assignment):
    a, b = list(assignment.candidates.order_by("position"))[:2]
    t0 = timezone.now()
    _send(assignment, t0, 0, "focus", a)
    _send(assignment, t0, 10, "heartbeat", a)
    _send(assignment, t0, 20, "focus", b)  # the 10 s before the switch belong to A
    done = _send(assignment, t0, 50, "heartbeat", b)
    a.refresh_from_db()
    b.refresh_from_db()
    assert (a.active_ms, b.active_ms, done.active_ms) == (20_000, 30_000, 50_000)
    assert ActivityEvent.objects.filter(assignment=assignment).count() == 4


def test_hidden_tab_time_is_excluded(assignment):
    a = assignment.candidates.first()
    t0 = timezone.now()
    _send(assignment, t0, 0, "focus", a)
    _send(assignment, t0, 5, "hidden", a)
    _send(assignment, t0, 55, "focus", a)  # 50 s hidden
    _send(assignment, t0, 60, "heartbeat", a)
    a.refresh_from_db()
    assert a.active_ms == 10_000


def test_a_gap_longer_than_the_idle_limit_does_not_count(assignment):
    a = assignment.candidates.first()
    t0 = timezone.now()
    _send(assignment, t0, 0, "focus", a)
    _send(assignment, t0, 300, "heartbeat", a)  # heartbeats stopped: closed tab or asleep
    _send(assignment, t0, 310, "heartbeat", a)
    a.refresh_from_db()
    assert a.active_ms == 10_000


def test_idle_reported_by_the_page_stops_the_clock(assignment):
    a = assignment.candidates.first()
    t0 = timezone.now()
    _send(assignment, t0, 0, "focus", a)
    _send(assignment, t0, 30, "idle", a)
    _send(assignment, t0, 59, "heartbeat", a)  # ignored as the state was idle
    a.refresh_from_db()
    assert a.active_ms == 30_000


def test_a_reload_continues_the_same_clock(assignment):
    a = assignment.candidates.first()
    t0 = timezone.now()
    _send(assignment, t0, 0, "focus", a)
    _send(assignment, t0, 10, "hidden", a)  # pagehide of the old page
    _send(assignment, t0, 12, "focus", a)  # the reloaded page
    _send(assignment, t0, 22, "heartbeat", a)
    a.refresh_from_db()
    assert a.active_ms == 20_000


def test_a_fix_request_is_stamped_with_the_time_spent_before_it(assignment):
    a, b = list(assignment.candidates.order_by("position"))[:2]
    t0 = timezone.now()
    _send(assignment, t0, 0, "focus", a)
    _send(assignment, t0, 30, "heartbeat", a)
    fix = fix_request_create(
        candidate=a,
        path="x.py",
        line=3,
        side="new",
        text="t",
        severity="minor",
        now=_at(t0, 42),
    )
    assert fix.active_ms_before == 42_000
    later = fix_request_create(
        candidate=b, path="x.py", line=1, side="new", text="t", severity="nit", now=_at(t0, 45)
    )
    assert later.active_ms_before == 0


def test_unknown_kinds_and_foreign_tokens_are_ignored(assignment, campaign, other_reviewer):
    other = assignment_next(campaign=campaign, reviewer=other_reviewer)
    foreign = other.candidates.first()
    t0 = timezone.now()
    review_events_record(
        assignment=assignment,
        events=[{"kind": "teleport"}, {"kind": "focus", "candidate": foreign.token}],
        now=t0,
    )
    _send(assignment, t0, 10, "heartbeat")
    assert Candidate.objects.get(pk=foreign.pk).active_ms == 0


def test_a_submitted_review_stops_counting(assignment):
    from review.services.reviewing import label_save

    for c in assignment.candidates.all():
        label_save(
            candidate=c,
            values={
                "tier": "t2",
                "rank_in_tier": 1,
                "mergeability": "as_is",
                **dict.fromkeys(
                    [
                        "approach_suitability",
                        "implementation_precision",
                        "minimality_of_changes",
                        "unintended_side_effects",
                        "codebase_consistency",
                    ],
                    3,
                ),
            },
        )
    review_submit(assignment=assignment)
    a = assignment.candidates.first()
    t0 = timezone.now()
    _send(assignment, t0, 0, "focus", a)
    _send(assignment, t0, 10, "heartbeat", a)
    a.refresh_from_db()
    assert a.active_ms == 0
