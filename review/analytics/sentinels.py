"""Selector: the sentinel pairs of a filter slice (a reviewer's first and sentinel review of one
group, both submitted), as judgements per candidate for `review.stats.consistency`."""

from __future__ import annotations

from django.contrib.auth import get_user_model

from review.analytics.filters import Filters
from review.models import Assignment, Label
from review.stats.consistency import Judgement, SentinelPair


def sentinel_pairs(filters: Filters) -> tuple[list[SentinelPair], dict[int, str]]:
    """Every submitted sentinel in the slice with its submitted first review, and the names of
    their reviewers (for the staff dashboard). Three queries."""
    done = Assignment.objects.filter(filters.group_q("group__"), status=Assignment.Status.SUBMITTED)
    if filters.campaign is not None:
        done = done.filter(campaign_id=filters.campaign)
    if filters.reviewer is not None:
        done = done.filter(reviewer_id=filters.reviewer)
    repeats = list(done.sentinels().values_list("pk", "campaign_id", "group_id", "reviewer_id"))
    if not repeats:
        return [], {}
    wanted = {(c, g, r) for _, c, g, r in repeats}
    firsts = {
        (c, g, r): pk
        for pk, c, g, r in done.firsts()
        .filter(group_id__in={g for _, g, _ in wanted}, reviewer_id__in={r for *_, r in wanted})
        .values_list("pk", "campaign_id", "group_id", "reviewer_id")
        if (c, g, r) in wanted
    }
    ids = {pk for pk, *_ in repeats} | set(firsts.values())
    judged: dict[int, dict[int, Judgement]] = {}
    for assignment, attempt, tier, rank in (
        Label.objects.filter(candidate__assignment_id__in=ids)
        .exclude(tier="")
        .values_list("candidate__assignment_id", "candidate__attempt_id", "tier", "rank_in_tier")
    ):
        judged.setdefault(assignment, {})[attempt] = (tier, rank)
    pairs = [
        SentinelPair(reviewer=r, first=judged.get(firsts[(c, g, r)], {}), again=judged.get(pk, {}))
        for pk, c, g, r in sorted(repeats)
        if (c, g, r) in firsts
    ]
    names = dict(
        get_user_model()
        .objects.filter(pk__in={p.reviewer for p in pairs})
        .values_list("pk", "username")
    )
    return pairs, names
