"""The reviewer's viewed-file marks."""

from __future__ import annotations

from django.db import transaction

from review.models import Assignment, Candidate
from review.services.reviewing import check_open


def candidate_viewed_set(*, candidate: Candidate, path: str, viewed: bool) -> list[str]:
    """Mark one file of the candidate's diff viewed or not; returns the viewed paths.

    The caller checks that ``path`` is in the candidate's diff. Idempotent, and safe with two tabs
    open: the read-modify-write happens under the assignment's row lock.
    """
    with transaction.atomic():
        check_open(Assignment.objects.select_for_update().get(pk=candidate.assignment_id))
        row = Candidate.objects.select_for_update().get(pk=candidate.pk)
        paths = [p for p in row.viewed_paths if p != path]
        if viewed:
            paths.append(path)
        if paths != row.viewed_paths:
            row.viewed_paths = paths
            row.save(update_fields=["viewed_paths"])
    candidate.viewed_paths = paths
    return paths
