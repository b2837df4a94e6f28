"""Service: move the data version (grading.models.versions) when data the statistics read changes.

Every writer of a model in `review.analytics.snapshots.STATS_MODELS` calls `data_changed()`
inside its transaction; tests/analytics/test_data_version.py finds writers that do not.
Explicit calls rather than signals (the house style keeps logic out of `save()` and signals, and
signals miss queryset `update()`, `bulk_create()` and m2m writes through a `through` model).
"""

from __future__ import annotations

import uuid

from django.db import transaction
from django.db.models import F

from grading.models import DataVersion


def _bump() -> None:
    if not DataVersion.objects.filter(pk=1).update(n=F("n") + 1):
        # The row is made by a migration; a flushed database (tests) has none until now.
        DataVersion.objects.get_or_create(pk=1, defaults={"n": 1})


def data_changed() -> None:
    """Move the data version once the current transaction commits (at once outside one).

    After the commit, in its own short statement, rather than inside the writer's transaction:
    an import holds its transaction for as long as it reads, and the one counter row locked
    until then would queue every grader run and review submission behind it (and could deadlock
    with their row locks). After the commit is still safe: readers take the version before they
    read the data (`snapshot_compute`, `labels_refresh`, `campaign_consensus`), so a computation
    that ran between the commit and the bump is stamped with the old version and recomputed.
    The price is that a process dying in that instant leaves the change unseen until the next.
    Call it once per service call, not per row: each call is one UPDATE after the commit.
    """
    transaction.on_commit(_bump, robust=True)


def data_version_renew() -> str:
    """A new token for the data version, at once: every cached statistic and consensus stops
    matching and is computed again. For what no writer is told about: a database restored from
    a backup (its counter rewinds to values that caches computed since already carry), edits in
    raw SQL, `manage.py shell` or a data migration. Returns the new version."""
    token = uuid.uuid4()
    with transaction.atomic():
        if not DataVersion.objects.filter(pk=1).update(token=token, n=F("n") + 1):
            DataVersion.objects.get_or_create(pk=1, defaults={"token": token, "n": 1})
        row = DataVersion.objects.get(pk=1)
    return f"{row.token}:{row.n}"
