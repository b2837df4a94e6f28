"""Benchmark the headline agreement statistics with a 2,000-resample task bootstrap.

Synthetic data: 10,000 groups (one task each) x 16 attempts, ~60% passing, 3 human reviews per
passing candidate, a grader tier and ordering key per passing candidate. Times

* fast: ``review.stats.headline_with_ci`` (κ, raw agreement, alpha humans, alpha with grader,
  concordance, τ-b, top-1) with 2,000 resamples by task, including building the per-task sums;
* naive: the same κ / alpha / τ-b computed by sklearn / krippendorff / scipy on each materialised
  resample in a Python loop, for a few resamples only, extrapolated to 2,000.

Run: ``.venv/bin/python bench/bench_stats.py [--groups 10000] [--naive-resamples 5]``.
"""

import argparse
import time
import warnings

import krippendorff
import numpy as np
from scipy.stats import kendalltau
from sklearn.metrics import cohen_kappa_score

from review.stats import headline_with_ci


def synthetic(n_groups: int, attempts: int, reviews: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    passing = rng.random((n_groups, attempts)) < 0.6
    quality = rng.normal(size=(n_groups, attempts))
    true_tier = np.digitize(quality, [-0.5, 0.7]) * -1 + 3  # higher quality → lower tier
    human_keys = np.where(passing, true_tier + 0.0, np.nan)
    grader_score = quality + rng.normal(0, 0.7, quality.shape)
    grader_keys = np.where(passing, -grader_score, np.nan)
    grader_tier = np.where(passing, np.digitize(grader_score, [-0.5, 0.7]) * -1 + 3.0, np.nan)
    noise = rng.choice([-1, 0, 0, 0, 1], size=(reviews, n_groups, attempts))
    humans = np.where(passing, np.clip(true_tier + noise, 1, 3), np.nan)
    flat = passing.ravel()
    return {
        "grader_tier": grader_tier.ravel()[flat],
        "consensus_tier": np.median(humans, axis=0).ravel()[flat],
        "human_ratings": humans.reshape(reviews, -1)[:, flat],
        "candidate_task": np.repeat(np.arange(n_groups), attempts)[flat],
        "human_keys": human_keys,
        "grader_keys": grader_keys,
        "group_task": np.arange(n_groups),
    }


def naive_resample(data, rng) -> None:
    """One resample the slow way: materialise the tasks, then call the reference libraries."""
    n_groups = len(data["group_task"])
    tasks = rng.integers(0, n_groups, n_groups)
    order = np.argsort(data["candidate_task"], kind="stable")
    starts = np.searchsorted(data["candidate_task"][order], np.arange(n_groups + 1))
    rows = np.concatenate([order[starts[t] : starts[t + 1]] for t in tasks])
    cohen_kappa_score(
        data["grader_tier"][rows],
        data["consensus_tier"][rows],
        weights="quadratic",
        labels=[1, 2, 3],
    )
    krippendorff.alpha(
        reliability_data=data["human_ratings"][:, rows],
        value_domain=[1, 2, 3],
        level_of_measurement="ordinal",
    )
    taus = []
    for t in tasks:
        h, g = data["human_keys"][t], data["grader_keys"][t]
        both = ~np.isnan(h) & ~np.isnan(g)
        if both.sum() >= 2:
            taus.append(kendalltau(h[both], g[both]).statistic)
    np.nanmean(taus)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--groups", type=int, default=10_000)
    parser.add_argument("--attempts", type=int, default=16)
    parser.add_argument("--reviews", type=int, default=3)
    parser.add_argument("--resamples", type=int, default=2_000)
    parser.add_argument("--naive-resamples", type=int, default=5)
    args = parser.parse_args()

    data = synthetic(args.groups, args.attempts, args.reviews)
    print(
        f"{args.groups} groups x {args.attempts} attempts, {len(data['grader_tier'])} passing "
        f"candidates x {args.reviews} reviews; {args.resamples} task resamples"
    )

    start = time.perf_counter()
    result = headline_with_ci(**data, n_resamples=args.resamples, seed=1)
    fast = time.perf_counter() - start
    for name, ci in result.items():
        print(f"  {name:18s} {ci.estimate:.4f}  95% CI [{ci.low:.4f}, {ci.high:.4f}]")
    print(f"fast (all 8 statistics, {args.resamples} resamples): {fast:.2f} s")

    rng = np.random.default_rng(2)
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for _ in range(args.naive_resamples):
            naive_resample(data, rng)
    per = (time.perf_counter() - start) / args.naive_resamples
    naive = per * args.resamples
    print(
        f"naive (κ sklearn + alpha krippendorff + τ-b scipy per group): {per:.2f} s per resample, "
        f"measured on {args.naive_resamples} resamples and extrapolated to {args.resamples}: "
        f"{naive:.0f} s"
    )
    print(f"speed-up: {naive / fast:.0f}x (the naive figure covers only 3 of the 8 statistics)")


if __name__ == "__main__":
    main()
