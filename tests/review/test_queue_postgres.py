"""Concurrent askers against real PostgreSQL never get a duplicate or exceed k."""

import threading
from collections import Counter

import pytest
from django.db import connection

from review.models import Assignment
from review.services.campaigns import campaign_create
from review.services.queue import assignment_next
from tests.factories import UserFactory
from tests.review.helpers import make_groups

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]


def test_concurrent_reviewers_never_share_a_slot():
    make_groups(5)
    users = [UserFactory() for _ in range(12)]
    campaign = campaign_create(name="race", created_by=None, reviewers=users, filters={}, overlap=2)
    barrier = threading.Barrier(len(users))
    errors: list[BaseException] = []

    def ask(user):
        try:
            barrier.wait()
            for _ in range(2):  # the second ask returns the current assignment
                assignment_next(campaign=campaign, reviewer=user)
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=ask, args=(u,)) for u in users]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    rows = list(Assignment.objects.values_list("group_id", "reviewer_id"))
    per_group = Counter(g for g, _ in rows)
    assert len(rows) == 10  # 5 groups × k=2, two reviewers left without work
    assert max(per_group.values()) == 2
    assert len(set(rows)) == len(rows)
    assert max(Counter(r for _, r in rows).values()) == 1
