"""Reads for blind review. Everything a reviewer reaches goes through `*_for_reviewer`, which
filters by reviewer in the query itself: someone else's assignment is simply not found (None;
the views answer 404)."""

from __future__ import annotations

import random
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from django.contrib.auth.models import User
from django.db.models import Count, Exists, F, OuterRef, Prefetch, QuerySet

from grading.models import Attempt, GraderRun, Group
from grading.selectors.synthetic import run_is_synthetic, synthetic_q
from grading.services.tokens import SERVICE_ACCOUNTS_GROUP
from review.models import Assignment, Campaign, CampaignGroup, Candidate, FixRequest
from review.sentinels import MIN_GAP_WHEN_IDLE, SubmittedGroup, sentinel_pick

LIVE = (Assignment.Status.IN_PROGRESS, Assignment.Status.SUBMITTED)


def groups_matching(
    *,
    run: int | None = None,
    step: int | None = None,
    repository: str | None = None,
    has_verdict: bool | None = None,
) -> QuerySet[Group]:
    """Groups with at least one passing attempt (nothing to rank otherwise), filtered."""
    passing = Attempt.objects.passing().filter(group=OuterRef("pk"))
    qs = Group.objects.filter(Exists(passing))
    if run is not None:
        qs = qs.filter(step__run_id=run)
    if step is not None:
        qs = qs.filter(step__number=step)
    if repository:
        qs = qs.filter(task__repo=repository)
    if has_verdict is not None:
        verdict = GraderRun.objects.filter(group=OuterRef("pk"), status=GraderRun.Status.SUCCEEDED)
        qs = qs.filter(Exists(verdict)) if has_verdict else qs.exclude(Exists(verdict))
    return qs.order_by("step__run_id", "step__number", "pk")


@dataclass(frozen=True)
class QueueRow:
    campaign: Campaign
    current: Assignment | None
    submitted: list[Assignment]
    open_slots: int


def reviewer_queue(*, reviewer: User) -> list[QueueRow]:
    """The reviewer's campaigns, each with their current assignment and what is left to take."""
    campaigns = list(
        Campaign.objects.filter(reviewers=reviewer, status=Campaign.Status.ACTIVE)
        .annotate(n_groups=Count("entries", distinct=True), n_synthetic=_n_synthetic())
        .order_by("-created_at")
    )
    mine = list(
        Assignment.objects.filter(reviewer=reviewer, campaign__in=campaigns).order_by("-started_at")
    )
    rows = []
    for campaign in campaigns:
        own = [a for a in mine if a.campaign_id == campaign.pk]
        current = next((a for a in own if a.status == Assignment.Status.IN_PROGRESS), None)
        submitted = [a for a in own if a.status == Assignment.Status.SUBMITTED]
        rows.append(QueueRow(campaign, current, submitted, _open_slots(campaign, reviewer)))
    return rows


def _n_synthetic() -> Count:
    """Per campaign: how many of its groups are synthetic (grading.selectors.synthetic)."""
    return Count("entries", filter=synthetic_q("entries__group__"), distinct=True)


def synthetic_campaign_names(*, names: Iterable[str]) -> set[str]:
    """Which of these campaigns hold synthetic groups (the gate page names campaigns)."""
    return set(
        Campaign.objects.filter(name__in=list(names))
        .annotate(n_synthetic=_n_synthetic())
        .filter(n_synthetic__gt=0)
        .values_list("name", flat=True)
    )


def campaign_by_name_or_id(*, ref: str) -> Campaign | None:
    """The campaign named `ref`, else the one whose id it is (commands take either)."""
    found = Campaign.objects.filter(name=ref).first()
    if found is None and ref.isdigit():
        found = Campaign.objects.filter(pk=int(ref)).first()
    return found


def campaigns_for_staff() -> QuerySet[Campaign]:
    """Every campaign, newest first, with how many of its groups are synthetic."""
    return Campaign.objects.annotate(n_synthetic=_n_synthetic()).order_by("-created_at")


def open_slots(*, campaign: Campaign, reviewer: User) -> int:
    return _open_slots(campaign, reviewer)


def _open_slots(campaign: Campaign, reviewer: User) -> int:
    """Groups this reviewer could still take (under k, and not already theirs), counting a
    sentinel they are owed as one more group like any other."""
    live = Assignment.objects.filter(campaign=campaign, status__in=LIVE)
    counts = dict(
        live.firsts()
        .order_by()
        .values("group_id")
        .annotate(n=Count("pk"))
        .values_list("group_id", "n")
    )
    taken = set(live.filter(reviewer=reviewer).values_list("group_id", flat=True))
    groups = CampaignGroup.objects.filter(campaign=campaign).values_list("group_id", flat=True)
    regular = sum(1 for g in groups if counts.get(g, 0) < campaign.overlap and g not in taken)
    return regular + _sentinel_owed(campaign, reviewer)


@dataclass(frozen=True)
class SentinelHistory:
    """What the queue needs to decide on a sentinel for one reviewer in one campaign."""

    submitted: list[SubmittedGroup]  # their first reviews, in submission order
    sentinels: int  # sentinels made for them, in any state
    expired: Assignment | None  # a sentinel of theirs whose lease ran out


def sentinel_history(*, campaign: Campaign, reviewer: User) -> SentinelHistory:
    mine = Assignment.objects.filter(campaign=campaign, reviewer=reviewer)
    repeats = list(mine.sentinels().order_by("pk"))
    repeated = {a.group_id for a in repeats}
    firsts = (
        mine.firsts()
        .filter(status=Assignment.Status.SUBMITTED)
        .order_by("submitted_at", "pk")
        .values_list("group_id", flat=True)
    )
    return SentinelHistory(
        submitted=[SubmittedGroup(g, g in repeated) for g in firsts],
        sentinels=len(repeats),
        expired=next((a for a in repeats if a.status == Assignment.Status.EXPIRED), None),
    )


def _sentinel_owed(campaign: Campaign, reviewer: User) -> int:
    """1 when the queue would serve this reviewer a sentinel once they ask, else 0."""
    if campaign.sentinel_rate <= 0:
        return 0
    history = sentinel_history(campaign=campaign, reviewer=reviewer)
    if history.expired is not None:
        return 1
    # Whether any group qualifies at the smallest gap (the choice itself is random).
    pick = sentinel_pick(
        history.submitted,
        rate=campaign.sentinel_rate,
        sentinels=history.sentinels,
        min_gap=MIN_GAP_WHEN_IDLE,
        rng=random.Random(0),
    )
    return int(pick is not None)


def assignment_for_reviewer(*, assignment_id: int, reviewer: User) -> Assignment | None:
    """The review page's one big read: constant query count in candidates and files.

    The patches come without their text: every request of the page (each tab's panel, each
    autosave and heartbeat) reads this, and the rendered pages are cached by the patches'
    hashes; what renders a patch afresh loads the texts it needs in one query
    (`review.blinded_cache.redacted_texts`)."""
    qs = Assignment.objects.filter(pk=assignment_id, reviewer=reviewer).select_related(
        "campaign", "group__task", "group__step__run"
    )
    candidates = (
        Candidate.objects.select_related("attempt__patch", "attempt__trajectory", "label")
        .defer("attempt__patch__content")
        .order_by("position")
    )
    qs = qs.prefetch_related(
        Prefetch("candidates", queryset=candidates),
        Prefetch("candidates__fix_requests", queryset=FixRequest.objects.order_by("created_at")),
    )
    return qs.first()


def candidate_for_reviewer(*, assignment: Assignment, token: str) -> Candidate | None:
    return (
        Candidate.objects.select_related("attempt__patch", "attempt__trajectory")
        .filter(assignment=assignment, token=token)
        .first()
    )


def fix_request_for_reviewer(*, assignment: Assignment, fix_id: int) -> FixRequest | None:
    return (
        FixRequest.objects.select_related("candidate")
        .filter(pk=fix_id, candidate__assignment=assignment)
        .first()
    )


def latest_verdict_run(*, group_id: int) -> GraderRun | None:
    return (
        GraderRun.objects.filter(group_id=group_id, status=GraderRun.Status.SUCCEEDED)
        .prefetch_related("grades")
        .order_by("-finished_at", "-pk")
        .first()
    )


def campaign_overview(*, campaign_id: int) -> dict[str, Any]:
    """Staff page: every group with its assignments (any reviewer) and flags."""
    campaigns = Campaign.objects.select_related("impact_config").prefetch_related("reviewers")
    campaign = campaigns.get(pk=campaign_id)
    # In the order the queue hands them out.
    order = (
        [F("impact").desc(nulls_last=True), "position"]
        if campaign.queue_order == Campaign.QueueOrder.RL_IMPACT
        else ["position"]
    )
    entries = list(
        CampaignGroup.objects.filter(campaign=campaign)
        .select_related("group__task", "group__step__run")
        .order_by(*order)
    )
    assignments = list(
        Assignment.objects.filter(campaign=campaign).select_related("reviewer").order_by("pk")
    )
    by_group: dict[int, list[Assignment]] = {}
    for a in assignments:
        by_group.setdefault(a.group_id, []).append(a)
    reviewers = list(campaign.reviewers.all())
    service = set(
        campaign.reviewers.filter(groups__name=SERVICE_ACCOUNTS_GROUP).values_list("pk", flat=True)
    )
    return {
        "campaign": campaign,
        # Made before the form and the admin refused them: its API tokens are refused
        # (grading.services.tokens) until it is taken out; staff can read grader verdicts.
        "service_reviewers": [u.get_username() for u in reviewers if u.pk in service],
        "staff_reviewers": [u.get_username() for u in reviewers if u.is_staff],
        "n_synthetic": sum(1 for e in entries if run_is_synthetic(e.group.step.run)),
        "rows": [(e, by_group.get(e.group_id, [])) for e in entries],
        "counts": {
            s: sum(1 for a in assignments if a.status == s) for s in Assignment.Status.values
        },
    }
