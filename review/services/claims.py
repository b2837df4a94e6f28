"""Marking the grader's claims (after the reveal): correct, wrong or can't tell."""

from __future__ import annotations

from datetime import datetime

from django.db import transaction
from django.utils import timezone

from grading.services.data_version import data_changed
from review.models import Candidate, ClaimMark
from review.selectors.claims import candidate_claims
from review.services.reveal import revealed_run


class NothingToMarkError(Exception):
    """No revealed verdict, or no such claim about this candidate: the views answer 404."""


def claim_mark_set(
    *, candidate: Candidate, handle: str, mark: str, now: datetime | None = None
) -> ClaimMark:
    """Record (or change) the reviewer's mark on one claim about `candidate`.

    Only once the grader's verdict is revealed to this reviewer (submitted, in a campaign that
    reveals): before that the claim does not exist as far as the reviewer can tell.
    """
    if mark not in ClaimMark.Mark.values:
        raise ValueError(f"unknown mark {mark!r}")
    run = revealed_run(assignment=candidate.assignment)
    if run is None:
        raise NothingToMarkError("nothing revealed")
    claims = candidate_claims(run=run, candidates=[candidate])
    found = next((c for c in claims if c.handle == handle and c.about.pk == candidate.pk), None)
    if found is None:
        raise NothingToMarkError("no such claim")
    with transaction.atomic():
        data_changed()
        row, _ = ClaimMark.objects.update_or_create(
            candidate=candidate,
            grader_run=run,
            claim_key=found.claim.key,
            defaults={
                "evidence_id": found.claim.evidence_id,
                "criterion": found.claim.criterion,
                "mark": mark,
                "marked_at": now or timezone.now(),
            },
        )
    return row
