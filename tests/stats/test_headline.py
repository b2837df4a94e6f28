"""The headline set: shared-resample CIs whose point estimates equal the direct statistics.

Per-criterion κ is checked against ``scipy.stats.bootstrap`` resampling task ids, with sklearn's
κ of the resampled tasks' items as the statistic: the same seed draws the same task indices (see
``test_bootstrap.py``), so the two intervals agree to rounding.
"""

import warnings

import numpy as np
import pytest
from scipy.stats import bootstrap
from sklearn.metrics import cohen_kappa_score

from review.stats.agreement import (
    criterion_kappas,
    krippendorff_alpha_ordinal,
    raw_agreement,
    weighted_kappa,
)
from review.stats.headline import criterion_kappas_with_ci, headline_with_ci
from review.stats.ranking import ranking_agreement

CRITERIA = ("approach", "precision", "minimality", "side_effects", "consistency")


def test_headline_estimates_equal_the_direct_statistics():
    rng = np.random.default_rng(0)
    n_groups, k = 40, 5
    human_keys = rng.integers(1, 4, (n_groups, k)).astype(float)
    grader_keys = human_keys + rng.normal(0, 0.8, human_keys.shape)
    grader_tier = np.clip(np.rint(grader_keys), 1, 3).ravel()
    humans = np.clip(human_keys.ravel() + rng.integers(-1, 2, (3, n_groups * k)), 1, 3)
    humans[rng.random(humans.shape) < 0.2] = np.nan
    consensus = human_keys.ravel()
    got = headline_with_ci(
        grader_tier=grader_tier,
        consensus_tier=consensus,
        human_ratings=humans,
        candidate_task=np.repeat(np.arange(n_groups), k),
        human_keys=human_keys,
        grader_keys=grader_keys,
        group_task=np.arange(n_groups),
        n_resamples=300,
        seed=1,
    )
    ranking = ranking_agreement(human_keys, grader_keys)
    with_grader = np.vstack([humans, grader_tier])
    assert got["kappa"].estimate == pytest.approx(weighted_kappa(grader_tier, consensus))
    assert got["raw_agreement"].estimate == pytest.approx(raw_agreement(grader_tier, consensus))
    assert got["alpha_humans"].estimate == pytest.approx(krippendorff_alpha_ordinal(humans).value)
    assert got["alpha_with_grader"].estimate == pytest.approx(
        krippendorff_alpha_ordinal(with_grader).value
    )
    assert got["concordance"].estimate == pytest.approx(ranking.concordance)
    assert got["tau_b"].estimate == pytest.approx(ranking.mean_tau_b)
    assert got["top1"].estimate == pytest.approx(ranking.top1)
    assert got["top1_chance"].estimate == pytest.approx(ranking.top1_chance)
    for ci in got.values():
        assert ci.low <= ci.estimate <= ci.high
        assert ci.n_clusters == n_groups


def kappas_with_ci(grader, human, task, n_resamples, seed=0, **kw):
    return criterion_kappas_with_ci(
        grader_scores=grader,
        human_scores=human,
        item_task=task,
        criteria=CRITERIA,
        n_resamples=n_resamples,
        seed=seed,
        **kw,
    )


def rubric_items(n_tasks, seed=0):
    """Items (labels) on tasks of 2-6 items, grader and reviewer scores 1-5, 10% missing."""
    rng = np.random.default_rng(seed)
    task = np.repeat(np.arange(n_tasks), rng.integers(2, 7, n_tasks))
    grader = rng.integers(1, 6, (task.size, len(CRITERIA))).astype(float)
    human = np.clip(grader + rng.integers(-1, 2, grader.shape), 1, 5)
    human[rng.random(human.shape) < 0.1] = np.nan
    return task, grader, human


def sk_rubric_kappa(a, b):
    keep = ~np.isnan(a) & ~np.isnan(b)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return cohen_kappa_score(a[keep], b[keep], weights="quadratic", labels=[1, 2, 3, 4, 5])


@pytest.mark.parametrize("method", ["percentile", "bca"])
def test_criterion_kappa_cis_match_scipy_bootstrap_resampling_tasks(method):
    n_tasks = 15
    task, grader, human = rubric_items(n_tasks)
    rows_of = [np.flatnonzero(task == t) for t in range(n_tasks)]

    def statistic(tasks):
        # The naive way: materialise the drawn tasks' items, then sklearn per criterion.
        rows = np.concatenate([rows_of[t] for t in tasks])
        return np.array([sk_rubric_kappa(grader[rows, j], human[rows, j]) for j in range(5)])

    # 500 resamples keep sklearn's loop near a second. BCa's z0 counts resamples below the
    # estimate, so one mathematically equal to it would make the comparison hinge on the last
    # bit of two κ implementations; this data has none.
    expected = bootstrap(
        (np.arange(n_tasks),),
        statistic,
        vectorized=False,
        n_resamples=500,
        method=method,
        rng=np.random.default_rng(11),
    )
    got = kappas_with_ci(grader, human, task, 500, seed=11, method=method)
    for j, name in enumerate(CRITERIA):
        ci = got[name]
        assert ci.estimate == pytest.approx(sk_rubric_kappa(grader[:, j], human[:, j]))
        assert ci.low == pytest.approx(expected.confidence_interval.low[j], rel=1e-9)
        assert ci.high == pytest.approx(expected.confidence_interval.high[j], rel=1e-9)
        assert ci.standard_error == pytest.approx(expected.standard_error[j], rel=1e-9)
        assert ci.n_clusters == n_tasks and ci.n_valid == 500


def test_criterion_kappa_estimates_equal_criterion_kappas():
    task, grader, human = rubric_items(30, seed=1)
    got = kappas_with_ci(grader, human, task, 200)
    direct = criterion_kappas(grader, human, CRITERIA)
    assert list(got) == list(CRITERIA)
    for name in CRITERIA:
        assert got[name].estimate == pytest.approx(direct[name], abs=1e-12)
        assert got[name].low <= got[name].estimate <= got[name].high


def test_a_criterion_without_scored_pairs_has_no_kappa_and_no_interval():
    task, grader, human = rubric_items(10, seed=2)
    grader[:, 2] = np.nan  # the grader never scored "minimality"
    human[::2, 3] = np.nan  # and "side_effects" pairs only where the other score is missing
    grader[1::2, 3] = np.nan
    got = kappas_with_ci(grader, human, task, 100)
    direct = criterion_kappas(grader, human, CRITERIA)
    for name in ("minimality", "side_effects"):
        assert direct[name] is None
        ci = got[name]
        assert ci.estimate is None and ci.low is None and ci.high is None
        assert ci.standard_error is None and ci.n_valid == 0
    assert got["approach"].low is not None  # the other criteria are unaffected


def test_a_criterion_with_one_shared_score_is_undefined_like_kappa():
    task, grader, human = rubric_items(10, seed=3)
    grader[:, 1] = human[:, 1] = 4.0
    got = kappas_with_ci(grader, human, task, 100)
    # Same as weighted κ and sklearn: NaN (undefined), which the CI reports as no estimate.
    assert np.isnan(criterion_kappas(grader, human, CRITERIA)["precision"])
    assert np.isnan(sk_rubric_kappa(grader[:, 1], human[:, 1]))
    ci = got["precision"]
    assert ci.estimate is None and ci.low is None and ci.high is None
    assert ci.n_clusters == 10


def test_criterion_kappa_on_a_single_task_collapses_to_the_estimate():
    grader = np.array([[1, 2, 3, 4, 5], [2, 3, 4, 5, 1], [5, 5, 1, 2, 3]], dtype=float)
    human = np.array([[1, 3, 3, 4, 4], [2, 3, 5, 5, 1], [4, 5, 1, 1, 3]], dtype=float)
    got = kappas_with_ci(grader, human, [0, 0, 0], 50)
    for j, name in enumerate(CRITERIA):
        ci = got[name]
        assert ci.estimate == pytest.approx(sk_rubric_kappa(grader[:, j], human[:, j]))
        assert ci.low == ci.estimate == ci.high
        assert ci.n_clusters == 1


def test_criterion_kappas_on_no_items_are_empty():
    got = kappas_with_ci(np.empty((0, 5)), np.empty((0, 5)), np.empty(0, dtype=np.int64), 50)
    assert all(ci.estimate is None and ci.low is None and ci.n_clusters == 0 for ci in got.values())
