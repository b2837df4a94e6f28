"""The headline set: shared-resample CIs whose point estimates equal the direct statistics."""

import numpy as np
import pytest

from review.stats.agreement import krippendorff_alpha_ordinal, raw_agreement, weighted_kappa
from review.stats.headline import headline_with_ci
from review.stats.ranking import ranking_agreement


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
