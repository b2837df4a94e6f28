import itertools

import krippendorff
import numpy as np
import pytest
from scipy.stats import kendalltau
from sklearn.metrics import cohen_kappa_score

from review.stats.gate import Ratings, agreement_with_ci, paired_difference_with_ci


def _data(seed: int = 0):
    rng = np.random.default_rng(seed)
    task = np.repeat(np.arange(12), 5)
    ref_tier = rng.integers(1, 4, task.size)
    grader_tier = np.clip(ref_tier + rng.integers(-1, 2, task.size), 1, 3)
    ref_key = ref_tier * 1000 + rng.integers(1, 4, task.size)
    grader_key = grader_tier * 1000 + rng.integers(1, 4, task.size)
    return task, Ratings(grader_tier, grader_key), Ratings(ref_tier, ref_key)


def _concordance(task, ref_key, grader_key) -> float:
    conc = pairs = 0.0
    for t in np.unique(task):
        idx = np.flatnonzero(task == t)
        for i, j in itertools.combinations(idx, 2):
            r = np.sign(ref_key[i] - ref_key[j])
            if r == 0:
                continue
            g = np.sign(grader_key[i] - grader_key[j])
            pairs += 1
            conc += 1.0 if g == r else 0.5 if g == 0 else 0.0
    return conc / pairs


def test_every_statistic_matches_the_reference_libraries() -> None:
    task, grader, ref = _data()
    st = agreement_with_ci(grader, ref, task, n_resamples=200, seed=3)
    g_tier, r_tier = np.asarray(grader.tier), np.asarray(ref.tier)
    assert st["kappa"].estimate == pytest.approx(
        cohen_kappa_score(r_tier, g_tier, weights="quadratic", labels=[1, 2, 3])
    )
    assert st["alpha"].estimate == pytest.approx(
        krippendorff.alpha(
            np.vstack([g_tier, r_tier]).astype(float),
            level_of_measurement="ordinal",
            value_domain=[1, 2, 3],
        )
    )
    assert st["exact"].estimate == pytest.approx(np.mean(g_tier == r_tier))
    assert st["t3_recall"].estimate == pytest.approx(np.mean(g_tier[r_tier == 3] == 3))
    gk, rk = np.asarray(grader.key, float), np.asarray(ref.key, float)
    assert st["concordance"].estimate == pytest.approx(_concordance(task, rk, gk))
    taus = [kendalltau(rk[task == t], gk[task == t]).statistic for t in np.unique(task)]
    assert st["tau_b"].estimate == pytest.approx(np.nanmean(taus))
    for name in ("kappa", "concordance"):
        assert st[name].low <= st[name].estimate <= st[name].high


def test_a_grader_that_ties_everything_scores_chance() -> None:
    task, _, ref = _data(1)
    flat = Ratings(np.full(task.size, 2), np.full(task.size, 2000))
    st = agreement_with_ci(flat, ref, task, n_resamples=1, seed=0)
    assert st["concordance"].estimate == pytest.approx(0.5)
    assert st["top1"].estimate == pytest.approx(st["top1_chance"].estimate)
    assert st["top1"].estimate < 1.0


def test_paired_differences_share_the_resampled_tasks() -> None:
    task, grader, ref = _data(2)
    _, other, _ = _data(5)
    diff = paired_difference_with_ci(grader, other, ref, task, n_resamples=300, seed=7)
    a = agreement_with_ci(grader, ref, task, n_resamples=1, seed=0)
    b = agreement_with_ci(other, ref, task, n_resamples=1, seed=0)
    for name in ("concordance", "kappa"):
        assert diff[name].estimate == pytest.approx(a[name].estimate - b[name].estimate)
    # Against itself every resample's difference is exactly 0.
    same = paired_difference_with_ci(grader, grader, ref, task, n_resamples=100, seed=7)
    assert same["kappa"].low == same["kappa"].high == 0.0
    # The interval is the spread of differences on the same draws, not of two separate ones.
    rng = np.random.default_rng(7)
    tasks = np.unique(task)
    draws = []
    for _ in range(300):
        pick = rng.integers(0, tasks.size, tasks.size)
        idx = np.concatenate([np.flatnonzero(task == tasks[i]) for i in pick])
        ga, gb, r = (np.asarray(x.tier)[idx] for x in (grader, other, ref))
        ka = cohen_kappa_score(r, ga, weights="quadratic", labels=[1, 2, 3])
        kb = cohen_kappa_score(r, gb, weights="quadratic", labels=[1, 2, 3])
        draws.append(ka - kb)
    low, high = np.quantile(draws, [0.025, 0.975])
    assert diff["kappa"].low == pytest.approx(low) and diff["kappa"].high == pytest.approx(high)
