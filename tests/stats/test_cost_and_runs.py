"""Reviewer cost, λ-cap frequency, status rates and the two-run audit from plain records."""

import numpy as np
import pytest

from review.stats.cost import ReviewCostRecord, cost_by_tier
from review.stats.runs import (
    AttemptStatusRecord,
    AuditCandidate,
    GroupLambdaRecord,
    audit_two_runs,
    lambda_cap_by_step,
    status_rates_by_step,
)


def test_it_summarises_reviewer_cost_by_tier():
    records = [
        ReviewCostRecord(1, None, 0, True),
        ReviewCostRecord(1, 100.0, 1, True),
        ReviewCostRecord(3, 30.0, 3, False),
        ReviewCostRecord(3, 50.0, 2, False),
        ReviewCostRecord(3, 70.0, 4, False),
    ]
    got = cost_by_tier(records)
    assert got[1].n_reviews == 2 and got[1].n_with_issue == 1
    assert got[1].first_issue_median == 100.0
    assert got[1].share_mergeable_as_is == 1.0
    assert got[3].first_issue_median == 50.0
    assert (got[3].first_issue_q1, got[3].first_issue_q3) == (40.0, 60.0)
    assert got[3].fix_requests_per_candidate == 3.0
    assert got[3].share_mergeable_as_is == 0.0


def test_it_handles_no_issues_and_no_records():
    got = cost_by_tier([ReviewCostRecord("T1", None, 0, True)])
    assert got["T1"].first_issue_median is None
    assert cost_by_tier([]) == {}


def test_it_measures_lambda_cap_frequency_per_run_and_step():
    records = [
        GroupLambdaRecord("r", 1, True, 0.025),
        GroupLambdaRecord("r", 1, False),
        GroupLambdaRecord("r", 1, None),  # fallback: not in the denominator
        GroupLambdaRecord("r", 2, None),
    ]
    got = lambda_cap_by_step(records)
    assert got[("r", 1)].cap_frequency == 0.5
    assert got[("r", 1)].n_groups == 3 and got[("r", 1)].n_with_lambda == 2
    assert got[("r", 1)].mean_shift_capped == pytest.approx(0.025)
    assert got[("r", 1)].mean_shift_all == pytest.approx(0.0125)
    assert got[("r", 2)].cap_frequency is None and got[("r", 2)].mean_shift_capped is None


def test_it_measures_exploit_and_infra_rates():
    statuses = ["valid"] * 6 + ["infra_failed"] * 2 + ["exploit_confirmed"] * 2
    got = status_rates_by_step([AttemptStatusRecord("r", 3, s) for s in statuses])
    assert got[("r", 3)].infra_rate == pytest.approx(0.2)
    assert got[("r", 3)].exploit_rate == pytest.approx(0.25)
    only_infra = status_rates_by_step([AttemptStatusRecord("r", 1, "infra_failed")])
    assert only_infra[("r", 1)].exploit_rate is None


def test_it_audits_two_runs():
    cands = [
        AuditCandidate("gagar", "t1", 1, 4.5),
        AuditCandidate("gagar", "t1", 2, 3.0),
        AuditCandidate("base", "t1", 2, 3.0),
        AuditCandidate("gagar", "t2", 1, 4.0),
        AuditCandidate("base", "t2", 3, 2.0),
        AuditCandidate("base", "t3", 3, 1.0),  # no gagar passer on t3: not compared
    ]
    got = audit_two_runs(cands, "gagar", "base", n_resamples=200, seed=0)
    # Pairs: t1 (4.5 v 3) win, (3 v 3) tie; t2 (4 v 2) win → 2.5 / 3.
    assert got.win_rate.estimate == pytest.approx(2.5 / 3)
    assert got.n_pairs == 3 and got.n_tasks == 2
    assert got.tier_share["gagar"] == pytest.approx({1: 2 / 3, 2: 1 / 3, 3: 0.0})
    assert got.mean_quality["base"] == pytest.approx(2.0)
    assert got.win_rate.low <= got.win_rate.estimate <= got.win_rate.high


def test_it_audits_runs_without_overlap():
    got = audit_two_runs([AuditCandidate("a", "t", 1, 4.0)], "a", "b", n_resamples=10)
    assert got.win_rate.estimate is None and got.mean_quality["b"] is None
    assert np.isclose(sum(got.tier_share["a"].values()), 1.0)


def test_candidates_without_a_quality_count_in_the_tiers_only():
    """QA's case: 2 T1, 3 T2, 2 T3 whose T2 quality is unknown (scores left pre-filled). The
    tiers count all seven; quality and the win rate the four with a quality. Checked against
    pandas (shares), statistics (mean) and scipy's Mann–Whitney U (pairs won, ties half)."""
    import statistics

    import pandas as pd
    from scipy.stats import mannwhitneyu

    a = [(1, 4.6), (1, 4.2), (2, None), (2, None), (2, None), (3, 2.2), (3, 1.8)]
    b = [(1, 4.2), (2, 3.4), (2, 3.0), (3, 2.0)]
    cands = [AuditCandidate("a", "t", t, q) for t, q in a] + [
        AuditCandidate("b", "t", t, q) for t, q in b
    ]
    got = audit_two_runs(cands, "a", "b", n_resamples=50, seed=0)

    shares = pd.Series([t for t, _ in a]).value_counts(normalize=True)
    assert got.tier_share["a"] == pytest.approx({t: shares.get(t, 0.0) for t in (1, 2, 3)})
    assert got.tier_share["a"][2] == pytest.approx(3 / 7)
    known_a = [q for _, q in a if q is not None]
    assert got.mean_quality["a"] == pytest.approx(statistics.fmean(known_a))
    assert got.n_with_quality == {"a": 4, "b": 4}
    qb = [q for _, q in b]
    u = mannwhitneyu(known_a, qb, alternative="two-sided").statistic
    assert got.win_rate.estimate == pytest.approx(u / (len(known_a) * len(qb)))
    assert got.n_pairs == 16 and got.n_tasks == 1


def test_a_side_with_no_quality_at_all_has_no_mean_and_no_pairs():
    cands = [AuditCandidate("a", "t", 2, None), AuditCandidate("b", "t", 1, 4.0)]
    got = audit_two_runs(cands, "a", "b", n_resamples=10, seed=0)
    assert got.tier_share["a"] == {1: 0.0, 2: 1.0, 3: 0.0}
    assert got.mean_quality["a"] is None and got.n_with_quality["a"] == 0
    assert got.win_rate.estimate is None and got.n_pairs == 0 and got.n_tasks == 0
