"""Self-consistency sentinels in the queue: a submitted group comes back to its reviewer later,
as a second assignment (the only kind the database allows), with new tokens, aliases and order,
taking none of the group's k slots."""

from __future__ import annotations

import pytest
from django.db import IntegrityError, transaction
from django.urls import reverse
from django.utils import timezone

from review.models import Assignment
from review.selectors.reviewing import open_slots
from review.services.campaigns import campaign_create
from review.services.queue import assignment_next
from review.services.reviewing import review_submit
from tests.factories import UserFactory
from tests.review.helpers import complete_labels, make_groups

pytestmark = pytest.mark.django_db


def _campaign(reviewers, *, rate=0.5, overlap=1):
    return campaign_create(
        name="S",
        created_by=None,
        reviewers=reviewers,
        filters={},
        overlap=overlap,
        sentinel_rate=rate,
        rubric_required=False,
    )


def _review(campaign, reviewer) -> Assignment:
    assignment = assignment_next(campaign=campaign, reviewer=reviewer)
    assert assignment is not None
    complete_labels(assignment)
    return review_submit(assignment=assignment)


def test_the_database_allows_a_second_assignment_only_as_a_sentinel():
    (group,) = make_groups(1)
    user = UserFactory()
    campaign = _campaign([user])
    now = timezone.now()
    fields = {"campaign": campaign, "group": group, "reviewer": user}
    times = {"started_at": now, "expires_at": now}
    Assignment.objects.create(**fields, **times)
    with pytest.raises(IntegrityError), transaction.atomic():
        Assignment.objects.create(**fields, **times)
    Assignment.objects.create(**fields, **times, sentinel=True)
    with pytest.raises(IntegrityError), transaction.atomic():
        Assignment.objects.create(**fields, **times, sentinel=True)


def test_a_submitted_group_comes_back_later_with_new_aliases_and_order():
    groups = make_groups(4, passing=5)
    user = UserFactory()
    campaign = _campaign([user], rate=0.5)
    first = [_review(campaign, user) for _ in range(2)]
    # Two first reviews owe one sentinel, but the first group was submitted only one group
    # ago: a regular group comes next.
    third = _review(campaign, user)
    assert not third.sentinel and third.group_id not in {a.group_id for a in first}
    again = assignment_next(campaign=campaign, reviewer=user)
    assert again.sentinel and again.group_id == first[0].group_id
    before = {c.attempt_id: c for c in first[0].candidates.all()}
    after = {c.attempt_id: c for c in again.candidates.all()}
    assert before.keys() == after.keys() and len(after) == 5
    assert all(after[a].alias != before[a].alias for a in after)
    assert not {c.token for c in before.values()} & {c.token for c in after.values()}
    assert again.pk != first[0].pk
    # Nothing of the first review is carried over: no labels, no viewed files, no time.
    assert not any(hasattr(c, "label") for c in after.values())
    assert all(c.viewed_paths == [] and c.active_ms == 0 for c in after.values())
    complete_labels(again)
    review_submit(assignment=again)
    # One owed, one made: the fourth group is next, and every group has been handed out.
    fourth = assignment_next(campaign=campaign, reviewer=user)
    assert not fourth.sentinel and fourth.group_id == groups[3].pk


def test_a_sentinel_takes_none_of_the_groups_k_slots():
    make_groups(3)
    alice, bob = UserFactory(), UserFactory()
    campaign = _campaign([alice, bob], rate=1.0, overlap=2)
    done = [_review(campaign, alice) for _ in range(3)]
    sentinel = assignment_next(campaign=campaign, reviewer=alice)
    assert sentinel.sentinel
    # Bob can still take every group, the one alice sees again included.
    got = {_review(campaign, bob).group_id for _ in range(3)}
    assert got == {a.group_id for a in done}


def test_a_sentinel_owed_at_the_end_is_counted_and_served_when_nothing_else_is_left():
    make_groups(2)
    user = UserFactory()
    campaign = _campaign([user], rate=0.5)
    a = _review(campaign, user)
    assert open_slots(campaign=campaign, reviewer=user) == 1
    _review(campaign, user)
    # The regular queue is empty; the owed sentinel is one more group available to them.
    assert open_slots(campaign=campaign, reviewer=user) == 1
    again = assignment_next(campaign=campaign, reviewer=user)
    assert again.sentinel and again.group_id == a.group_id
    complete_labels(again)
    review_submit(assignment=again)
    assert open_slots(campaign=campaign, reviewer=user) == 0
    assert assignment_next(campaign=campaign, reviewer=user) is None


def test_an_expired_sentinel_comes_back_with_its_drafts(client):
    make_groups(2)
    user = UserFactory()
    campaign = _campaign([user], rate=0.5)
    _review(campaign, user)
    _review(campaign, user)
    again = assignment_next(campaign=campaign, reviewer=user)
    complete_labels(again)
    Assignment.objects.filter(pk=again.pk).update(
        status=Assignment.Status.EXPIRED, expires_at=timezone.now()
    )
    back = assignment_next(campaign=campaign, reviewer=user)
    assert back.pk == again.pk and back.status == Assignment.Status.IN_PROGRESS
    assert all(hasattr(c, "label") for c in back.candidates.all())
    # Opening the expired page resumes it too (a sentinel holds no slot to lose).
    Assignment.objects.filter(pk=again.pk).update(status=Assignment.Status.EXPIRED)
    client.force_login(user)
    response = client.get(reverse("review:page", args=[again.pk]))
    assert response.status_code == 200
    assert Assignment.objects.get(pk=again.pk).status == Assignment.Status.IN_PROGRESS


def test_no_rate_no_sentinel():
    make_groups(3)
    user = UserFactory()
    campaign = _campaign([user], rate=0.0)
    for _ in range(3):
        _review(campaign, user)
    assert assignment_next(campaign=campaign, reviewer=user) is None
    assert not Assignment.objects.filter(sentinel=True).exists()
