"""The fair queue: hand a reviewer the next group of a campaign.

Fairness: the group with the fewest live reviews (in progress or submitted) goes first, and no
group ever gets more than the campaign's overlap k. Two reviewers asking at once must never
both take the last slot of a group. On PostgreSQL the candidate rows are locked with
`SELECT … FOR UPDATE SKIP LOCKED` (a concurrent asker simply skips a row being assigned and
takes the next) and the live count is read again under the lock, in a fresh statement, because
the first count came from a snapshot taken before the lock was granted. SQLite has no row locks,
but this project opens its SQLite transactions with BEGIN IMMEDIATE, which serialises writers
for the whole database: the same code is correct there, just less concurrent.

Sentinels (review.sentinels): when a campaign sets a sentinel rate, a group the reviewer already
submitted comes back to them, later, as a new assignment with fresh tokens, aliases and order.
A sentinel takes none of the group's k slots and is served like any group. Campaigns ordered
"by RL impact" hand out first the groups whose review can change training most
(review.services.impact), each up to k reviews before the next.
"""

from __future__ import annotations

import random
import secrets
from datetime import datetime, timedelta

from django.contrib.auth import get_user_model
from django.contrib.auth.models import User
from django.db import connection, transaction
from django.db.models import Count, F, IntegerField, OuterRef, QuerySet, Subquery, Value
from django.db.models.functions import Coalesce
from django.utils import timezone

from grading.domain.candidates import distinct_patches
from grading.models import Attempt
from review.blinding import draw_order, draw_order_unlike
from review.models import Assignment, Campaign, CampaignGroup, Candidate
from review.selectors.reviewing import sentinel_history
from review.sentinels import MIN_GAP, MIN_GAP_WHEN_IDLE, sentinel_pick
from review.services.impact import campaign_impact_refresh

LIVE = (Assignment.Status.IN_PROGRESS, Assignment.Status.SUBMITTED)
# Rows to try before giving up; each miss means someone else just filled that group.
_TRY_ROWS = 20


class AssignmentGoneError(Exception):
    """An expired assignment whose slot someone else has taken since."""


def assignments_expire(*, now: datetime | None = None) -> int:
    """Expire in-progress assignments whose lease ran out; their groups return to the queue."""
    moment = now or timezone.now()
    return Assignment.objects.filter(
        status=Assignment.Status.IN_PROGRESS, expires_at__lte=moment
    ).update(status=Assignment.Status.EXPIRED)


def _live_count(campaign: Campaign, group_id: int) -> int:
    # Sentinels are a reviewer's second look, not one of the group's k reviews.
    return (
        Assignment.objects.firsts()
        .filter(campaign=campaign, group_id=group_id, status__in=LIVE)
        .count()
    )


def _candidate_attempts(group_id: int) -> list[Attempt]:
    """One attempt per distinct patch among the passing ones: identical patches are one
    candidate, judged once (the label applies to each; see review.analytics.frame)."""
    passing = Attempt.objects.passing().filter(group_id=group_id).order_by("index")
    return [unit[0] for unit in distinct_patches(passing, lambda a: a.patch_id)]


def _create(
    campaign: Campaign,
    group_id: int,
    reviewer: User,
    now: datetime,
    *,
    repeat_of: Assignment | None = None,
) -> Assignment:
    assignment = Assignment.objects.create(
        campaign=campaign,
        group_id=group_id,
        reviewer=reviewer,
        started_at=now,
        expires_at=now + timedelta(minutes=campaign.lease_minutes),
        sentinel=repeat_of is not None,
    )
    # SystemRandom: the order must not be predictable from anything a reviewer can see.
    attempts = _candidate_attempts(group_id)
    if repeat_of is None:
        drawn = draw_order(attempts, random.SystemRandom())
    else:
        # A sentinel: no candidate keeps the letter it had in the reviewer's first review.
        before = dict(repeat_of.candidates.values_list("attempt_id", "alias"))
        by_id = {a.pk: a for a in attempts}
        drawn = [
            (alias, by_id[pk])
            for alias, pk in draw_order_unlike(list(by_id), before, random.SystemRandom())
        ]
    Candidate.objects.bulk_create(
        Candidate(
            assignment=assignment,
            attempt=attempt,
            alias=alias,
            position=pos,
            token=secrets.token_urlsafe(12),
        )
        for pos, (alias, attempt) in enumerate(drawn)
    )
    return assignment


def _lock_reviewer(reviewer: User) -> None:
    # One reviewer asking twice at once (two tabs) must not end up with two new groups.
    list(get_user_model().objects.select_for_update().filter(pk=reviewer.pk))


def _eligible(campaign: Campaign, reviewer: User) -> QuerySet[CampaignGroup]:
    live = (
        Assignment.objects.firsts()
        .filter(campaign=campaign, group=OuterRef("group"), status__in=LIVE)
        .order_by()
        .values("group")
        .annotate(n=Count("pk"))
        .values("n")
    )
    mine = Assignment.objects.filter(campaign=campaign, reviewer=reviewer, status__in=LIVE)
    eligible = (
        CampaignGroup.objects.filter(campaign=campaign)
        .exclude(group__in=mine.values("group"))
        .annotate(live=Coalesce(Subquery(live, output_field=IntegerField()), Value(0)))
        .filter(live__lt=campaign.overlap)
    )
    if campaign.queue_order == Campaign.QueueOrder.RL_IMPACT:
        # Most impact first (unscored groups last), each taken up to k before the next.
        return eligible.order_by(F("impact").desc(nulls_last=True), "live", "position", "pk")
    return eligible.order_by("live", "position", "pk")


def _claim_one(eligible: QuerySet[CampaignGroup]) -> CampaignGroup | None:
    """Lock the best eligible row, one row at a time (locking them all would starve others)."""
    features = connection.features
    if not features.has_select_for_update:
        return eligible.first()
    if features.has_select_for_update_skip_locked:
        entry = eligible.select_for_update(skip_locked=True, of=("self",)).first()
        if entry is not None:
            return entry
    # Every eligible row is being assigned right now: wait for one rather than give up.
    return eligible.select_for_update(of=("self",)).first()


def assignment_next(
    *, campaign: Campaign, reviewer: User, now: datetime | None = None
) -> Assignment | None:
    """The reviewer's current assignment in this campaign, else a fresh one, else None."""
    moment = now or timezone.now()
    if campaign.status != Campaign.Status.ACTIVE:
        return None
    if campaign.queue_order == Campaign.QueueOrder.RL_IMPACT:
        # Before the locks: it rewrites scores only where the stored advantages changed.
        campaign_impact_refresh(campaign=campaign)
    with transaction.atomic():
        _lock_reviewer(reviewer)
        current = Assignment.objects.filter(
            campaign=campaign,
            reviewer=reviewer,
            status=Assignment.Status.IN_PROGRESS,
            expires_at__gt=moment,
        ).first()
        if current is not None:
            return current
        assignments_expire(now=moment)
        return (
            _sentinel(campaign, reviewer, moment, min_gap=MIN_GAP)
            or _regular(campaign, reviewer, moment)
            # Nothing else left for them: a sentinel still owed need not wait any longer.
            or _sentinel(campaign, reviewer, moment, min_gap=MIN_GAP_WHEN_IDLE)
        )


def _regular(campaign: Campaign, reviewer: User, now: datetime) -> Assignment | None:
    tried: list[int] = []
    for _ in range(_TRY_ROWS):
        entry = _claim_one(_eligible(campaign, reviewer).exclude(pk__in=tried))
        if entry is None:
            return None
        tried.append(entry.pk)
        if _live_count(campaign, entry.group_id) >= campaign.overlap:
            continue
        old = (
            Assignment.objects.firsts()
            .filter(campaign=campaign, group_id=entry.group_id, reviewer=reviewer)
            .first()
        )
        if old is not None:
            # Their own expired assignment: take it back with the drafts it holds.
            _reactivate(old, now)
            return old
        return _create(campaign, entry.group_id, reviewer, now)
    return None


def _sentinel(
    campaign: Campaign, reviewer: User, now: datetime, *, min_gap: int
) -> Assignment | None:
    """A sentinel owed to this reviewer now, if any (the caller holds the reviewer's lock)."""
    if campaign.sentinel_rate <= 0:
        return None
    history = sentinel_history(campaign=campaign, reviewer=reviewer)
    if history.expired is not None:
        # Their own sentinel ran out of time: back, drafts intact (it holds no slot).
        _reactivate(history.expired, now)
        return history.expired
    group_id = sentinel_pick(
        history.submitted,
        rate=campaign.sentinel_rate,
        sentinels=history.sentinels,
        min_gap=min_gap,
        rng=random.SystemRandom(),
    )
    if group_id is None:
        return None
    first = Assignment.objects.firsts().get(campaign=campaign, group_id=group_id, reviewer=reviewer)
    return _create(campaign, group_id, reviewer, now, repeat_of=first)


def _reactivate(assignment: Assignment, now: datetime) -> None:
    assignment.status = Assignment.Status.IN_PROGRESS
    assignment.expires_at = now + timedelta(minutes=assignment.campaign.lease_minutes)
    assignment.save(update_fields=["status", "expires_at"])


def assignment_resume(*, assignment: Assignment, now: datetime | None = None) -> Assignment:
    """Reopen an expired assignment if its group still has a free slot."""
    moment = now or timezone.now()
    if assignment.status != Assignment.Status.EXPIRED:
        return assignment
    with transaction.atomic():
        entry = CampaignGroup.objects.filter(
            campaign=assignment.campaign, group_id=assignment.group_id
        )
        if connection.features.has_select_for_update:
            entry = entry.select_for_update()
        list(entry)
        taken = _live_count(assignment.campaign, assignment.group_id)
        if not assignment.sentinel and taken >= assignment.campaign.overlap:
            raise AssignmentGoneError
        _reactivate(assignment, moment)
    return assignment
