"""The fair queue: k reviews per group at most, fewest-reviewed first, leases that expire."""

from datetime import timedelta

import pytest
from django.db import IntegrityError
from django.utils import timezone

from review.models import Assignment, Candidate, Label
from review.services.campaigns import campaign_create
from review.services.queue import AssignmentGoneError, assignment_next, assignment_resume
from review.services.reviewing import label_save
from tests.factories import UserFactory
from tests.review.helpers import make_groups

pytestmark = pytest.mark.django_db


def _campaign(reviewers, overlap=1, lease=60):
    return campaign_create(
        name="Q",
        created_by=None,
        reviewers=reviewers,
        filters={},
        overlap=overlap,
        lease_minutes=lease,
    )


def test_it_hands_out_the_least_reviewed_group_first():
    make_groups(3)
    users = [UserFactory() for _ in range(4)]
    campaign = _campaign(users, overlap=2)
    got = [assignment_next(campaign=campaign, reviewer=u).group_id for u in users[:3]]
    assert len(set(got)) == 3  # each group once before any group twice
    fourth = assignment_next(campaign=campaign, reviewer=users[3])
    assert fourth.group_id in got


def test_it_never_gives_a_group_more_than_k_reviews():
    make_groups(2)
    users = [UserFactory() for _ in range(6)]
    campaign = _campaign(users, overlap=2)
    handed = [assignment_next(campaign=campaign, reviewer=u) for u in users]
    assert sum(a is not None for a in handed) == 4
    assert handed[4] is None and handed[5] is None


def test_it_returns_the_current_assignment_until_it_is_submitted():
    make_groups(2)
    user = UserFactory()
    campaign = _campaign([user])
    first = assignment_next(campaign=campaign, reviewer=user)
    assert assignment_next(campaign=campaign, reviewer=user) == first


def test_it_draws_private_aliases_for_passing_attempts_only():
    make_groups(1, passing=3)
    a, b = UserFactory(), UserFactory()
    campaign = _campaign([a, b], overlap=2)
    first = assignment_next(campaign=campaign, reviewer=a)
    second = assignment_next(campaign=campaign, reviewer=b)
    for assignment in (first, second):
        candidates = list(assignment.candidates.order_by("position"))
        assert [c.alias for c in candidates] == ["A", "B", "C"]
        assert all(c.attempt.passed for c in candidates)
        assert len({c.token for c in candidates}) == 3
    tokens = set(first.candidates.values_list("token", flat=True))
    assert tokens.isdisjoint(second.candidates.values_list("token", flat=True))


def test_an_abandoned_assignment_expires_and_returns_to_the_queue():
    make_groups(1)
    a, b = UserFactory(), UserFactory()
    campaign = _campaign([a, b], overlap=1, lease=30)
    taken = assignment_next(campaign=campaign, reviewer=a)
    assert assignment_next(campaign=campaign, reviewer=b) is None
    later = timezone.now() + timedelta(minutes=31)
    again = assignment_next(campaign=campaign, reviewer=b, now=later)
    assert again is not None and again.group_id == taken.group_id
    taken.refresh_from_db()
    assert taken.status == Assignment.Status.EXPIRED
    with pytest.raises(AssignmentGoneError):
        assignment_resume(assignment=taken, now=later)


def test_a_reviewer_gets_their_expired_drafts_back():
    make_groups(1)
    user = UserFactory()
    campaign = _campaign([user], lease=30)
    taken = assignment_next(campaign=campaign, reviewer=user)
    label_save(candidate=taken.candidates.first(), values={"tier": "t2"})
    later = timezone.now() + timedelta(minutes=31)
    again = assignment_next(campaign=campaign, reviewer=user, now=later)
    assert again.pk == taken.pk and again.status == Assignment.Status.IN_PROGRESS
    assert Label.objects.get(candidate__assignment=again).tier == "t2"


def test_the_database_refuses_a_second_assignment_of_the_same_group_to_a_reviewer():
    make_groups(1)
    user = UserFactory.create()
    campaign = _campaign([user])
    first = assignment_next(campaign=campaign, reviewer=user)
    with pytest.raises(IntegrityError):
        Assignment.objects.create(
            campaign=campaign,
            group_id=first.group_id,
            reviewer_id=user.pk,
            started_at=timezone.now(),
            expires_at=timezone.now(),
        )


def test_a_closed_campaign_hands_out_nothing():
    make_groups(1)
    user = UserFactory()
    campaign = _campaign([user])
    campaign.status = campaign.Status.CLOSED
    campaign.save()
    assert assignment_next(campaign=campaign, reviewer=user) is None
    assert not Candidate.objects.exists()
