"""Adjudication of disagreement flags: staff settle whether the grader or the reviewer was right."""

from __future__ import annotations

from datetime import datetime

from django.contrib.auth.models import AbstractBaseUser
from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from review.models import Disagreement, Label

MAX_NOTE = 5000


def disagreement_resolve(
    *,
    disagreement: Disagreement,
    resolution: str,
    adjudicated_tier: str,
    note: str,
    by: AbstractBaseUser,
    now: datetime | None = None,
) -> Disagreement:
    """Record the outcome of an open flag. Resolving twice is refused: reopen first."""
    if resolution not in Disagreement.Resolution.values:
        raise ValidationError("Choose an outcome.")
    if adjudicated_tier and adjudicated_tier not in Label.Tier.values:
        raise ValidationError("Unknown tier.")
    if len(note) > MAX_NOTE:
        raise ValidationError(f"The note is longer than {MAX_NOTE} characters.")
    if "\x00" in note:
        raise ValidationError("The note contains a NUL character.")
    with transaction.atomic():
        flag = Disagreement.objects.select_for_update().get(pk=disagreement.pk)
        if flag.status == Disagreement.Status.RESOLVED:
            raise ValidationError("This flag is already resolved; reopen it to change the outcome.")
        flag.status = Disagreement.Status.RESOLVED
        flag.resolution = resolution
        flag.adjudicated_tier = adjudicated_tier
        flag.resolution_note = note
        flag.resolved_by_id = by.pk
        flag.resolved_at = now or timezone.now()
        flag.save()
    return flag


def disagreement_reopen(*, disagreement: Disagreement) -> Disagreement:
    """Back to open, clearing the outcome (the flag's own note stays)."""
    with transaction.atomic():
        flag = Disagreement.objects.select_for_update().get(pk=disagreement.pk)
        flag.status = Disagreement.Status.OPEN
        flag.resolution = ""
        flag.adjudicated_tier = ""
        flag.resolution_note = ""
        flag.resolved_by = None
        flag.resolved_at = None
        flag.save()
    return flag
