"""Grader score → human tier calibration, cross-validated by task."""

import numpy as np
import pytest

from review.stats.calibration import calibrate_tiers


def synthetic(seed=0, n_tasks=120, per_task=6, noise=0.6):
    rng = np.random.default_rng(seed)
    task = np.repeat(np.arange(n_tasks), per_task)
    tier = rng.integers(1, 4, task.size).astype(float)
    score = 5.0 - tier + rng.normal(0, noise, task.size)
    return score, tier, task


def test_it_gives_normalised_monotone_probabilities_to_every_candidate():
    score, tier, task = synthetic()
    tier[::4] = np.nan  # unreviewed candidates still get a calibrated tier
    cal = calibrate_tiers(score, tier, task)
    assert cal is not None
    assert not np.isnan(cal.tier).any()
    assert np.all(cal.probabilities >= 0)
    np.testing.assert_allclose(cal.probabilities.sum(axis=1), 1.0)
    # Unreviewed ones come from one fit on all reviewed data: P(T1) rises with the score.
    unreviewed = np.isnan(tier)
    order = np.argsort(score[unreviewed])
    assert np.all(np.diff(cal.probabilities[unreviewed][order, 0]) >= -1e-12)
    assert np.all(np.diff(cal.tier[unreviewed][order]) <= 0)


def test_it_reports_held_out_error_by_task():
    score, tier, task = synthetic()
    cal = calibrate_tiers(score, tier, task, n_splits=5)
    assert cal is not None and cal.n_folds == 5 and cal.n_labelled == tier.size
    assert cal.held_out_accuracy > 0.6
    assert cal.held_out_mae < 0.5
    noisy = calibrate_tiers(*synthetic(noise=3.0))
    assert noisy is not None and noisy.held_out_mae > cal.held_out_mae


def test_it_works_without_enough_tasks_for_cross_validation():
    cal = calibrate_tiers([4.0, 3.0, 1.0], [1, 2, 3], [7, 7, 7])
    assert cal is not None and cal.held_out_mae is None and cal.reason
    np.testing.assert_array_equal(cal.tier, [1, 2, 3])


def test_it_returns_none_without_reviewed_candidates():
    assert calibrate_tiers([1.0, 2.0], [np.nan, np.nan], [0, 1]) is None
    assert calibrate_tiers([], [], []) is None


def test_missing_scores_stay_missing():
    score, tier, task = synthetic(n_tasks=20)
    score[0] = np.nan
    cal = calibrate_tiers(score, tier, task)
    assert cal is not None and np.isnan(cal.tier[0]) and np.isnan(cal.probabilities[0]).all()
    assert cal.held_out_mae == pytest.approx(np.mean(np.abs(cal.tier[1:] - tier[1:])))
