"""Whole-group validation before a review is locked; pure, so it is tested without a database.

Rules (method §6): every candidate has a tier; within each of T1–T3 the ranks are set and dense
from 1 (ties share a rank: 1, 1, 2 is consistent, 1, 3 is not); every candidate has a
mergeability, and "not mergeable" is backed by at least one blocking fix request; when the
campaign requires the rubric, all five scores are set.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class CandidateDraft:
    alias: str
    tier: str  # "", "t1", "t2", "t3", "exploit"
    rank: int | None
    scores: Sequence[int | None]
    mergeability: str  # "", "as_is", "after_minor_fixes", "not_mergeable"
    blocking_fix_requests: int
    key: str = ""  # the candidate's page token, so a problem can be shown beside its field


@dataclass(frozen=True)
class Problem:
    """One reason the group cannot be submitted, with where it belongs on the page: the
    candidate (`key`, "" for the whole group) and the label field (`field`, "" for none)."""

    text: str
    key: str = ""
    field: str = ""


def submission_problem_items(
    drafts: Sequence[CandidateDraft], *, rubric_required: bool
) -> list[Problem]:
    problems: list[Problem] = []
    by_tier: dict[str, list[CandidateDraft]] = defaultdict(list)
    for d in drafts:

        def add(text: str, field: str, d: CandidateDraft = d) -> None:
            problems.append(Problem(f"{d.alias}: {text}", d.key, field))

        if not d.tier:
            add("choose a tier.", "tier")
            continue
        by_tier[d.tier].append(d)
        if d.tier != "exploit" and d.rank is None:
            add(f"give a rank within {d.tier.upper()}.", "rank_in_tier")
        if not d.mergeability:
            add("say whether it can be merged.", "mergeability")
        elif d.mergeability == "not_mergeable" and d.blocking_fix_requests == 0:
            add("“not mergeable” needs at least one blocking fix request.", "mergeability")
        if rubric_required and any(s is None for s in d.scores):
            add("score all five rubric criteria.", "rubric")
    for tier in ("t1", "t2", "t3"):
        members = by_tier.get(tier, [])
        ranks = sorted({d.rank for d in members if d.rank is not None})
        if ranks and ranks != list(range(1, len(ranks) + 1)):
            shown = ", ".join(str(r) for r in ranks)
            # Shown at the first candidate of the tier whose rank breaks the run.
            expected = set(range(1, len(ranks) + 1))
            off = next((d for d in members if d.rank not in expected), members[0])
            problems.append(
                Problem(
                    f"{tier.upper()}: ranks must run 1, 2, 3… without gaps (ties may share one); "
                    f"got {shown}.",
                    off.key,
                    "rank_in_tier",
                )
            )
    return problems


def submission_problems(drafts: Sequence[CandidateDraft], *, rubric_required: bool) -> list[str]:
    return [p.text for p in submission_problem_items(drafts, rubric_required=rubric_required)]
