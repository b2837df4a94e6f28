"""Developer cost of candidates by tier, from plain per-review records (method §1 and §6).

Cost is what a blind reviewer spent: active seconds until the first fix request, the number of fix
requests, and whether the code could be merged as is. Tier is whichever tier the caller groups by
(the reviewer's own, the consensus, or the grader's) — it is a plain label here.
"""

from collections import defaultdict
from collections.abc import Hashable, Iterable
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class ReviewCostRecord:
    """One reviewer x one candidate."""

    tier: Hashable  # e.g. 1, 2, 3 or "exploit"
    first_issue_seconds: float | None  # active time at the first fix request; None = no request
    fix_requests: int | None  # None = not recorded (a review imported from elsewhere)
    mergeable_as_is: bool


@dataclass(frozen=True)
class TierCost:
    n_reviews: int
    # Quantiles are over reviews that raised at least one issue; None if none did.
    first_issue_median: float | None
    first_issue_q1: float | None
    first_issue_q3: float | None
    n_with_issue: int
    # Over reviews that recorded fix requests and timing; None when none did (absent, not 0).
    fix_requests_per_candidate: float | None
    share_mergeable_as_is: float
    n_recorded: int = 0


def cost_by_tier(records: Iterable[ReviewCostRecord]) -> dict[Hashable, TierCost]:
    """Per-tier cost summary; an empty input gives an empty dict."""
    by_tier: dict[Hashable, list[ReviewCostRecord]] = defaultdict(list)
    for rec in records:
        by_tier[rec.tier].append(rec)
    out: dict[Hashable, TierCost] = {}
    for tier, recs in by_tier.items():
        recorded = [r for r in recs if r.fix_requests is not None]
        times = np.array(
            [r.first_issue_seconds for r in recorded if r.first_issue_seconds is not None],
            dtype=np.float64,
        )
        q1, med, q3 = (
            (float(q) for q in np.quantile(times, [0.25, 0.5, 0.75]))
            if times.size
            else (None, None, None)
        )
        out[tier] = TierCost(
            n_reviews=len(recs),
            first_issue_median=med,
            first_issue_q1=q1,
            first_issue_q3=q3,
            n_with_issue=int(times.size),
            fix_requests_per_candidate=(
                float(np.mean([r.fix_requests for r in recorded])) if recorded else None
            ),
            share_mergeable_as_is=float(np.mean([r.mergeable_as_is for r in recs])),
            n_recorded=len(recorded),
        )
    return out
