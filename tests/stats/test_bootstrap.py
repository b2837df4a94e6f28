"""Task bootstrap against scipy.stats.bootstrap; fast κ/alpha resamples against a naive loop.

How the scipy comparison works: scipy resamples n values with ``rng.integers(0, n, (batch, n))``;
we draw the same indices from the same seed and turn them into per-task counts, so for a mean of
per-task values the two bootstrap distributions — and hence the CIs — agree to rounding.
"""

import warnings

import krippendorff
import numpy as np
import pytest
from scipy.stats import bootstrap
from sklearn.metrics import cohen_kappa_score

from review.stats.agreement import (
    alpha_from_coincidences,
    cluster_coincidences,
    cluster_confusions,
    kappa_from_confusions,
)
from review.stats.bootstrap import cluster_bootstrap_ci, resample_counts


def mean_statistic(n):
    return lambda sums: sums[:, 0] / n


@pytest.mark.parametrize("method", ["percentile", "bca"])
@pytest.mark.parametrize("n", [5, 37, 400])
def test_it_matches_scipy_bootstrap_for_a_mean_of_task_values(method, n):
    x = np.random.default_rng(n).gamma(2.0, size=n)
    expected = bootstrap(
        (x,), np.mean, n_resamples=2000, method=method, rng=np.random.default_rng(11), batch=500
    )
    got = cluster_bootstrap_ci(
        mean_statistic(n), x[:, None], n_resamples=2000, seed=11, method=method, batch=500
    )
    assert got.estimate == pytest.approx(x.mean())
    assert got.low == pytest.approx(expected.confidence_interval.low, rel=1e-9)
    assert got.high == pytest.approx(expected.confidence_interval.high, rel=1e-9)
    assert got.standard_error == pytest.approx(expected.standard_error, rel=1e-9)


def test_it_is_reproducible_with_a_seed():
    x = np.random.default_rng(0).normal(size=(50, 1))
    first = cluster_bootstrap_ci(mean_statistic(50), x, n_resamples=300, seed=42)
    again = cluster_bootstrap_ci(mean_statistic(50), x, n_resamples=300, seed=42)
    other = cluster_bootstrap_ci(mean_statistic(50), x, n_resamples=300, seed=43)
    assert first == again
    assert first != other


def test_it_does_not_depend_on_the_batch_size():
    x = np.random.default_rng(1).normal(size=(60, 1))
    whole = cluster_bootstrap_ci(mean_statistic(60), x, n_resamples=500, seed=5, batch=500)
    parts = cluster_bootstrap_ci(mean_statistic(60), x, n_resamples=500, seed=5, batch=64)
    assert whole.low == pytest.approx(parts.low) and whole.high == pytest.approx(parts.high)


def test_fast_kappa_and_alpha_resamples_equal_the_reference_libraries_on_the_same_tasks():
    rng = np.random.default_rng(2)
    n_tasks, per_task = 30, 6
    task = np.repeat(np.arange(n_tasks), per_task)
    grader = rng.integers(1, 4, task.size)
    humans = rng.integers(1, 4, (3, task.size)).astype(float)
    humans[rng.random(humans.shape) < 0.2] = np.nan
    consensus = np.where(rng.random(task.size) < 0.7, grader, rng.integers(1, 4, task.size))
    confusions = cluster_confusions(grader, consensus, task, n_tasks)
    coincidences = cluster_coincidences(humans, task, n_tasks)

    counts = next(resample_counts(n_tasks, 10, seed=9, batch=10))
    fast_kappa = kappa_from_confusions(np.tensordot(counts, confusions, axes=1))
    fast_alpha = alpha_from_coincidences(np.tensordot(counts, coincidences, axes=1))
    for b in range(10):
        # The naive way: materialise the resampled candidates and call the libraries.
        tasks = np.repeat(np.arange(n_tasks), counts[b])
        rows = np.concatenate([np.flatnonzero(task == t) for t in tasks])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            kappa = cohen_kappa_score(
                grader[rows], consensus[rows], weights="quadratic", labels=[1, 2, 3]
            )
        alpha = krippendorff.alpha(
            reliability_data=humans[:, rows], value_domain=[1, 2, 3], level_of_measurement="ordinal"
        )
        assert fast_kappa[b] == pytest.approx(kappa, abs=1e-10)
        assert fast_alpha[b] == pytest.approx(alpha, abs=1e-10)


def test_it_returns_none_for_no_tasks():
    got = cluster_bootstrap_ci(mean_statistic(1), np.empty((0, 1)), n_resamples=10, seed=0)
    assert got.estimate is None and got.low is None and got.n_clusters == 0


def test_it_returns_none_when_the_statistic_is_undefined():
    with np.errstate(invalid="ignore"):
        got = cluster_bootstrap_ci(lambda s: s[:, 0] / s[:, 1], np.zeros((4, 2)), n_resamples=10)
    assert got.estimate is None and got.low is None


def test_it_collapses_to_the_estimate_on_one_task():
    got = cluster_bootstrap_ci(mean_statistic(1), [[3.0]], n_resamples=50, seed=0, method="bca")
    assert got.estimate == got.low == got.high == 3.0
