"""Create campaigns from a filter of groups."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from django.contrib.auth.models import User
from django.core.exceptions import ValidationError
from django.db import transaction

from grading.domain.redaction import build_redactor
from grading.models import GraderConfig
from grading.services.data_version import data_changed
from review.models import Campaign, CampaignGroup
from review.selectors.reviewing import groups_matching
from review.services.impact import campaign_impact_refresh


def campaign_create(
    *,
    name: str,
    created_by: User | None,
    reviewers: Iterable[User],
    filters: Mapping[str, Any],
    overlap: int = 2,
    show_trajectories: bool = True,
    show_test_output: bool = True,
    rubric_required: bool = True,
    show_reference: bool = False,
    reveal_policy: str = Campaign.Reveal.NEVER,
    lease_minutes: int = 180,
    fingerprint_patterns: str = "",
    sentinel_rate: float = 0.0,
    queue_order: str = Campaign.QueueOrder.POSITION,
    impact_config: GraderConfig | None = None,
) -> Campaign:
    """A campaign over every group the filter matches that has at least one passing attempt."""
    try:
        build_redactor((), fingerprint_patterns.splitlines(), catalogue=False)
    except Exception as exc:
        raise ValidationError(f"Bad fingerprint pattern: {exc}") from exc
    if not 0 <= sentinel_rate <= 1:
        raise ValidationError("The sentinel rate is a share between 0 and 1.")
    groups = list(groups_matching(**filters).values_list("pk", flat=True))
    if not groups:
        raise ValidationError("No group with a passing attempt matches these filters.")
    with transaction.atomic():
        campaign = Campaign.objects.create(
            name=name,
            created_by=created_by,
            overlap=overlap,
            show_trajectories=show_trajectories,
            show_test_output=show_test_output,
            rubric_required=rubric_required,
            show_reference=show_reference,
            reveal_policy=reveal_policy,
            lease_minutes=lease_minutes,
            fingerprint_patterns=fingerprint_patterns,
            sentinel_rate=sentinel_rate,
            queue_order=queue_order,
            impact_config=impact_config,
            filters=dict(filters),
        )
        campaign.reviewers.set(list(reviewers))
        CampaignGroup.objects.bulk_create(
            CampaignGroup(campaign=campaign, group_id=gid, position=pos)
            for pos, gid in enumerate(groups)
        )
        data_changed()
    if queue_order == Campaign.QueueOrder.RL_IMPACT:
        campaign_impact_refresh(campaign=campaign)
    return campaign
