"""Within-group ranking statistics; τ-b against scipy.stats.kendalltau."""

import warnings

import numpy as np
import pytest
from scipy.stats import kendalltau

from review.stats.ranking import (
    kendall_tau_b_per_group,
    pad_groups,
    pairwise_concordance,
    ranking_agreement,
)


def test_it_matches_scipy_kendall_tau_b_per_group():
    rng = np.random.default_rng(0)
    human = rng.integers(1, 4, (400, 16)).astype(float)
    grader = rng.integers(1, 7, (400, 16)).astype(float)
    human[rng.random(human.shape) < 0.4] = np.nan
    grader[rng.random(grader.shape) < 0.1] = np.nan
    got = kendall_tau_b_per_group(human, grader)
    for g in range(len(human)):
        both = ~np.isnan(human[g]) & ~np.isnan(grader[g])
        if both.sum() < 2:
            assert np.isnan(got[g])
            continue
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            expected = kendalltau(human[g][both], grader[g][both]).statistic
        if np.isnan(expected):
            assert np.isnan(got[g])
        else:
            assert got[g] == pytest.approx(expected, abs=1e-12)


def test_it_counts_grader_ties_as_half_and_skips_human_ties():
    # Human: a < b = c. Untied human pairs: (a,b), (a,c). Grader ties a,b; orders a before c.
    assert pairwise_concordance([[1, 2, 2]], [[5, 5, 7]]) == pytest.approx(0.75)


def test_it_pools_pairs_over_groups():
    human = pad_groups([[1, 2], [1, 2, 3]])
    grader = pad_groups([[2, 1], [1, 2, 3]])
    assert pairwise_concordance(human, grader) == pytest.approx(3 / 4)


def test_it_handles_one_passer():
    got = ranking_agreement([[1]], [[1]])
    assert got.concordance is None and got.mean_tau_b is None and got.top1 is None
    assert got.tau_groups == 0 and got.top1_groups == 0


def test_it_handles_all_tied():
    got = ranking_agreement([[2, 2, 2]], [[1, 2, 3]])
    assert got.concordance is None  # no human-untied pair
    assert got.mean_tau_b is None  # τ-b undefined, group skipped
    assert got.top1 == pytest.approx(1.0)
    assert got.top1_chance == pytest.approx(1.0)


def test_it_reports_top1_and_its_chance_level():
    human = [[1, 2, 3, 4], [1, 2, np.nan, np.nan]]
    grader = [[2, 1, 3, 4], [1, 2, 3, 4]]
    got = ranking_agreement(human, grader)
    assert got.top1 == pytest.approx(0.5)
    assert got.top1_chance == pytest.approx((1 / 4 + 1 / 2) / 2)


def test_it_returns_none_for_an_empty_slice():
    got = ranking_agreement([], [])
    assert got.concordance is None and got.pairs == 0 and got.top1 is None


def test_a_ranker_that_ties_everything_sits_at_chance():
    rng = np.random.default_rng(1)
    human = rng.permutation(np.arange(8.0))[None, :]
    assert pairwise_concordance(human, np.zeros((1, 8))) == pytest.approx(0.5)
