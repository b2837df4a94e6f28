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


def submission_problems(drafts: Sequence[CandidateDraft], *, rubric_required: bool) -> list[str]:
    problems: list[str] = []
    by_tier: dict[str, list[CandidateDraft]] = defaultdict(list)
    for d in drafts:
        if not d.tier:
            problems.append(f"{d.alias}: choose a tier.")
            continue
        by_tier[d.tier].append(d)
        if d.tier != "exploit" and d.rank is None:
            problems.append(f"{d.alias}: give a rank within {d.tier.upper()}.")
        if not d.mergeability:
            problems.append(f"{d.alias}: say whether it can be merged.")
        elif d.mergeability == "not_mergeable" and d.blocking_fix_requests == 0:
            problems.append(f"{d.alias}: “not mergeable” needs at least one blocking fix request.")
        if rubric_required and any(s is None for s in d.scores):
            problems.append(f"{d.alias}: score all five rubric criteria.")
    for tier in ("t1", "t2", "t3"):
        ranks = sorted({d.rank for d in by_tier.get(tier, []) if d.rank is not None})
        if ranks and ranks != list(range(1, len(ranks) + 1)):
            shown = ", ".join(str(r) for r in ranks)
            problems.append(
                f"{tier.upper()}: ranks must run 1, 2, 3… without gaps (ties may share one); "
                f"got {shown}."
            )
    return problems
