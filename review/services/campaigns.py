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
from grading.services.tokens import SERVICE_ACCOUNTS_GROUP
from review.models import Campaign, CampaignGroup
from review.selectors.reviewing import groups_matching
from review.services.impact import campaign_impact_refresh


def service_reviewers(reviewers: Iterable[User]) -> list[str]:
    """The usernames among `reviewers` that are service accounts (none may review)."""
    pks = [u.pk for u in reviewers]
    return sorted(
        User.objects.filter(pk__in=pks, groups__name=SERVICE_ACCOUNTS_GROUP)
        .values_list("username", flat=True)
        .distinct()
    )


def service_reviewers_refuse(reviewers: Iterable[User]) -> None:
    """A service account holds the training loop's API tokens, which stop working while it is a
    reviewer anywhere (grading.services.tokens.token_owner_problem): refused here, with its
    name, so that an ordinary admin choice cannot silently stop the loop."""
    service = service_reviewers(reviewers)
    if service:
        raise ValidationError(
            f"{', '.join(service)}: a service account cannot be a campaign reviewer (it holds "
            "API tokens for the training loop, which would stop working); choose people."
        )


def reviewers_check(*, reviewers: Iterable[User], overlap: int, allow_staff: bool = True) -> None:
    """Refuse a set of reviewers a campaign cannot work with, with the reason (the error's code
    says which input it is about: "reviewers" or "overlap").

    k must not exceed the number of reviewers: each group needs k different reviewers, so with
    fewer it could never be completed. Staff can read the grader's verdicts (the admin, the
    dashboards, adjudication), so a staff reviewer is not blind: refused unless `allow_staff`
    says someone chose that knowingly."""
    chosen = list(reviewers)
    if not chosen:
        raise ValidationError("Choose at least one reviewer.", code="reviewers")
    try:
        service_reviewers_refuse(chosen)
    except ValidationError as exc:
        raise ValidationError(exc.messages[0], code="reviewers") from None
    staff = sorted(u.username for u in chosen if u.is_staff)
    if staff and not allow_staff:
        raise ValidationError(
            f"{', '.join(staff)}: a staff account can read the grader's verdicts (admin, "
            "dashboards, adjudication), so its review is not blind. Leave it out, or tick "
            "“Let staff accounts review” to include it knowingly.",
            code="reviewers",
        )
    if overlap > len(chosen):
        n = len(chosen)
        raise ValidationError(
            f"Overlap k = {overlap} needs at least {overlap} reviewers, but {n} "
            f"{'is' if n == 1 else 'are'} chosen: no group could be completed. "
            "Choose more reviewers or lower k.",
            code="overlap",
        )


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
    """A campaign over every group the filter matches that has at least one passing attempt.

    Service accounts are refused as reviewers. k against the number of reviewers is checked by
    the staff form and the admin (`reviewers_check`), not here: the demo, imports and scripts
    make a campaign and add its reviewers afterwards."""
    reviewers = list(reviewers)
    service_reviewers_refuse(reviewers)
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
