"""Analytics fixtures: staff and reviewer personas, and a helper that computes a page's snapshot
the way the worker does (the page itself never computes)."""

from __future__ import annotations

from unittest import mock

import pytest

from review.analytics import snapshots
from review.models import StatsSnapshot
from tests.factories import StaffFactory


@pytest.fixture
def lead(db):
    return StaffFactory(username="lead")


@pytest.fixture
def staff_client(client, lead):
    client.force_login(lead)
    return client


@pytest.fixture
def enqueued():
    """Task messages the services send, captured instead of reaching a broker."""
    with mock.patch("review.tasks.compute_snapshot_task.apply_async") as send:
        yield send


def run_worker() -> int:
    """Compute every waiting snapshot, as a worker receiving the messages would."""
    done = 0
    for pk in StatsSnapshot.objects.filter(status__in=[StatsSnapshot.Status.PENDING]).values_list(
        "pk", flat=True
    ):
        done += snapshots.snapshot_compute(snapshot_id=pk)
    return done
