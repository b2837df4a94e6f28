"""The data version: one row whose counter moves whenever data the statistics read changes.

Cached dashboard statistics, the campaign consensus cache and the stored consensus compare the
version they were computed on with this one (`review.analytics.snapshots.data_fingerprint`).
Counts and maxima of the tables missed edits in place (an attempt's status, a label changed in
the admin, a campaign's groups); a counter every writer moves misses nothing it is told about.
Writers move it through `grading.services.data_version.data_changed`.
"""

from __future__ import annotations

import uuid

from django.db import models


class DataVersion(models.Model):
    # A new token whenever the row is made again (a flushed database): a counter that restarts
    # from 0 could otherwise match a version computed before.
    token = models.UUIDField(default=uuid.uuid4, editable=False)
    n = models.BigIntegerField(default=0)

    class Meta:
        constraints = [
            models.CheckConstraint(condition=models.Q(pk=1), name="data_version_single_row"),
        ]

    def __str__(self) -> str:
        return f"data version {self.n}"
