"""Claim precision (`review.stats.claims`): correct / (correct + wrong), "can't tell" counted
apart, intervals resampling tasks exactly as scipy.stats.bootstrap resamples them."""

import numpy as np
import pytest
from scipy.stats import bootstrap

from review.stats import MIN_TASKS_FOR_INTERVAL, claim_precision


def _marks(n_tasks: int, seed: int):  # type: ignore[no-untyped-def]
    rng = np.random.default_rng(seed)
    per_task = rng.integers(1, 6, n_tasks)
    task = np.repeat(np.arange(n_tasks), per_task)
    group = rng.integers(0, 3, task.size)
    mark = rng.choice(["correct", "wrong", "unsure"], task.size, p=[0.6, 0.3, 0.1])
    return task, group, mark == "correct", mark == "wrong"


def test_the_estimate_is_correct_over_judged_and_unsure_is_counted_apart() -> None:
    task = np.array([0, 0, 1, 1, 2])
    group = np.array([0, 1, 0, 0, 1])
    correct = np.array([True, False, True, False, False])
    wrong = np.array([False, False, False, True, True])  # index 1: can't tell
    per, overall = claim_precision(
        task=task, group=group, correct=correct, wrong=wrong, n_groups=2, n_resamples=200, seed=1
    )
    assert (per[0].n_marked, per[0].n_correct, per[0].n_wrong, per[0].n_unsure) == (3, 2, 1, 0)
    assert per[0].precision.estimate == pytest.approx(2 / 3)
    assert (per[1].n_unsure, per[1].precision.estimate) == (1, 0.0)
    assert overall.n_marked == 5 and overall.precision.estimate == pytest.approx(2 / 4)
    assert per[0].precision.n_clusters == 2 and per[1].precision.n_clusters == 2
    assert overall.precision.n_clusters == 3 < MIN_TASKS_FOR_INTERVAL  # the page says so


def test_only_cant_tell_has_no_precision() -> None:
    per, _ = claim_precision(
        task=np.array([0, 1]),
        group=np.array([0, 0]),
        correct=np.array([False, False]),
        wrong=np.array([False, False]),
        n_groups=1,
        n_resamples=50,
        seed=0,
    )
    assert per[0].n_unsure == 2 and per[0].precision.estimate is None


@pytest.mark.parametrize("n_tasks", [8, 60])
def test_the_interval_matches_scipys_task_bootstrap_of_the_ratio(n_tasks: int) -> None:
    task, group, correct, wrong = _marks(n_tasks, n_tasks)
    _, overall = claim_precision(
        task=task, group=group, correct=correct, wrong=wrong, n_groups=3, n_resamples=1000, seed=7
    )
    # Per task: (correct, judged); scipy resamples the tasks (paired), the ratio of sums.
    c = np.bincount(task, weights=correct, minlength=n_tasks)
    j = np.bincount(task, weights=correct | wrong, minlength=n_tasks)
    expected = bootstrap(
        (c, j),
        lambda c, j, axis=-1: c.sum(axis=axis) / j.sum(axis=axis),
        paired=True,
        n_resamples=1000,
        method="percentile",
        rng=np.random.default_rng(7),
    )
    assert overall.precision.estimate == pytest.approx(c.sum() / j.sum())
    assert overall.precision.low == pytest.approx(expected.confidence_interval.low, rel=1e-9)
    assert overall.precision.high == pytest.approx(expected.confidence_interval.high, rel=1e-9)


def test_a_mark_cannot_be_both() -> None:
    with pytest.raises(ValueError):
        claim_precision(
            task=np.array([0]),
            group=np.array([0]),
            correct=np.array([True]),
            wrong=np.array([True]),
            n_groups=1,
        )
