"""Run-level dashboard rows: reviewer cost by tier, λ-cap frequency, exploit and infra rates."""

from __future__ import annotations

from collections import Counter
from typing import Any

import numpy as np

from review.analytics.frame import Frame
from review.stats import (
    AttemptStatusRecord,
    GroupLambdaRecord,
    ReviewCostRecord,
    cost_by_tier,
    lambda_cap_by_step,
    status_rates_by_step,
)

TIER_NAMES = {1.0: "T1", 2.0: "T2", 3.0: "T3"}
TIER_ORDER = ("T1", "T2", "T3", "exploit")


def cost_rows(frame: Frame) -> list[dict[str, Any]]:
    """Cost by the reviewer's own tier: what that reviewer spent on a candidate they rated so."""
    # Imported reviews recorded neither time nor fix requests: absent, never zero.
    records = [
        ReviewCostRecord(
            tier="exploit" if exploit else TIER_NAMES[tier],
            first_issue_seconds=None if imported or np.isnan(first) else float(first),
            fix_requests=None if imported else int(n_fix),
            mergeable_as_is=bool(mergeable),
        )
        for tier, exploit, first, n_fix, mergeable, imported in zip(
            frame.lab_tier.tolist(),
            frame.lab_exploit.tolist(),
            frame.lab_first_issue_s.tolist(),
            frame.lab_fix_requests.tolist(),
            frame.lab_mergeable.tolist(),
            frame.lab_imported.tolist(),
            strict=True,
        )
    ]
    by_tier = cost_by_tier(records)
    return [
        {
            "tier": t,
            "n_reviews": c.n_reviews,
            "n_timed": c.n_recorded,
            "first_issue_median_s": c.first_issue_median,
            "first_issue_q1_s": c.first_issue_q1,
            "first_issue_q3_s": c.first_issue_q3,
            "n_with_issue": c.n_with_issue,
            "fix_requests_per_candidate": c.fix_requests_per_candidate,
            "share_mergeable_as_is": c.share_mergeable_as_is,
        }
        for t in TIER_ORDER
        if (c := by_tier.get(t)) is not None
    ]


def lambda_cap_rows(frame: Frame, config: int | None) -> tuple[list[dict[str, Any]], str]:
    """λ-cap frequency per (run, step) for one configuration.

    Advantages are stored per parameter set; mixing λ_max values would mix two experiments, so
    the most common parameter set in the slice is reported (its hash is returned alongside).
    """
    rows = [r for r in frame.lambda_rows if r[0] == config]
    if not rows:
        return [], ""
    params = Counter(r[1] for r in rows).most_common(1)[0][0]
    stats = lambda_cap_by_step(
        GroupLambdaRecord(
            run=run, step=step, capped=None if lam is None else capped, mean_shift=shift
        )
        for _, ph, run, step, capped, shift, lam in rows
        if ph == params
    )
    return [
        {
            "run": run,
            "step": step,
            "groups": s.n_groups,
            "groups_with_lambda": s.n_with_lambda,
            "capped_groups": s.n_capped,
            "cap_frequency": s.cap_frequency,
            "mean_shift_capped": s.mean_shift_capped,
            "mean_shift_all": s.mean_shift_all,
        }
        for (run, step), s in sorted(stats.items(), key=lambda kv: (str(kv[0][0]), kv[0][1]))
    ], params


def status_rate_rows(frame: Frame) -> list[dict[str, Any]]:
    # The counts are already aggregated; one shared record object per count keeps this cheap.
    records = (
        rec
        for run, step, status, n in frame.status_counts
        for rec in [AttemptStatusRecord(run=run, step=step, status=status)] * n
    )
    rates = status_rates_by_step(records)
    return [
        {
            "run": run,
            "step": step,
            "attempts": r.n_attempts,
            "infra_rate": r.infra_rate,
            "exploit_rate": r.exploit_rate,
        }
        for (run, step), r in sorted(rates.items(), key=lambda kv: (str(kv[0][0]), kv[0][1]))
    ]
