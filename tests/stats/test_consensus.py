"""Human consensus: median tier and one-coin Dawid-Skene."""

import numpy as np
import pytest

from review.stats.consensus import dawid_skene_one_coin, median_tier


def test_it_takes_the_median_and_breaks_splits_towards_the_worse_tier():
    ratings = np.array([[1, 1, 2], [1, 2, np.nan], [2, 3, np.nan], [3, np.nan, np.nan]])
    np.testing.assert_array_equal(median_tier(ratings), [1, 2, 3, 3])


def test_it_leaves_unrated_candidates_missing():
    assert np.isnan(median_tier([[np.nan, np.nan]])).all()


def simulated(seed, accuracies, n=1500):
    rng = np.random.default_rng(seed)
    truth = rng.integers(1, 4, n)
    ratings = np.empty((n, len(accuracies)))
    for j, p in enumerate(accuracies):
        wrong = (truth - 1 + rng.integers(1, 3, n)) % 3 + 1
        ratings[:, j] = np.where(rng.random(n) < p, truth, wrong)
    ratings[rng.random(ratings.shape) < 0.25] = np.nan
    return truth, ratings


def test_it_recovers_reviewer_accuracies():
    accuracies = [0.9, 0.8, 0.55, 0.95]
    truth, ratings = simulated(0, accuracies)
    fit = dawid_skene_one_coin(ratings)
    assert fit is not None and fit.converged
    np.testing.assert_allclose(fit.accuracy, accuracies, atol=0.04)
    rated = ~np.isnan(ratings).all(axis=1)
    np.testing.assert_allclose(fit.posterior[rated].sum(axis=1), 1.0)
    assert np.mean(fit.tier == truth) >= np.mean(median_tier(ratings) == truth)


def test_it_needs_three_reviewers():
    _, ratings = simulated(1, [0.9, 0.8])
    assert dawid_skene_one_coin(ratings) is None
    assert dawid_skene_one_coin(np.empty((0, 3))) is None


def test_it_agrees_with_unanimous_reviewers():
    ratings = np.array([[1, 1, 1], [2, 2, 2], [3, 3, np.nan], [np.nan] * 3])
    fit = dawid_skene_one_coin(ratings)
    assert fit is not None
    np.testing.assert_array_equal(fit.tier[:3], [1, 2, 3])
    assert np.isnan(fit.tier[3]) and np.isnan(fit.posterior[3]).all()
    assert fit.prior.sum() == pytest.approx(1.0)
