"""The grader gate: one grader configuration against one human reference, with task-bootstrap CIs.

Per candidate: the grader's and the reference's tier and ordering key (lower is better, e.g.
tier·1000 + rank in tier) and the candidate's task. The reference is the human consensus or one
reviewer; a reviewer can also be the "grader" to print the ceiling. Statistics (all from per-task
sums, on shared task resamples, see ``bootstrap.py``):

* ``kappa``: quadratic-weighted Cohen's κ on tiers (``labels=[1, 2, 3]``);
* ``alpha``: Krippendorff's ordinal α of the two raters (grader, reference);
* ``exact``: share of candidates with the same tier;
* ``t3_recall``: share of the reference's T3 candidates the grader puts in T3;
* ``concordance``: pooled pairwise concordance over pairs the reference orders strictly, a pair
  the grader ties counting ½; ``tau_b``: mean per-group Kendall τ-b;
* ``top1``: share of groups whose grader-best is a reference-best, a tied grader top counting
  fractionally (|H∩G|/|G|), so a grader that ties everything scores ``top1_chance``.

``paired_difference_with_ci`` bootstraps *differences* between two graders on the same task
resamples (the paired design: both graders see the same drawn tasks), so its interval says
whether one grader really beats the other on these tasks.
"""

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial

import numpy as np
import numpy.typing as npt

from review.stats import ranking
from review.stats._types import FloatArray, as_float
from review.stats.agreement import (
    TIERS,
    alpha_from_coincidences,
    cluster_coincidences,
    cluster_confusions,
    kappa_from_confusions,
)
from review.stats.bootstrap import BootstrapCI, Seed, Statistic, cluster_bootstrap_many

STATISTICS: tuple[str, ...] = (
    "kappa",
    "alpha",
    "exact",
    "t3_recall",
    "concordance",
    "tau_b",
    "top1",
    "top1_chance",
)


@dataclass(frozen=True)
class Ratings:
    """One rater's view of the same candidates (NaN = not rated)."""

    tier: npt.ArrayLike
    key: npt.ArrayLike


def _exact(cms: FloatArray) -> FloatArray:
    n = cms.sum(axis=(-2, -1))
    out: FloatArray = np.divide(
        np.trace(cms, axis1=-2, axis2=-1), n, out=np.full(n.shape, np.nan), where=n > 0
    )
    return out


def _t3_recall(cms: FloatArray) -> FloatArray:
    # Rows are the reference's tiers: T3 row, grader's T3 column.
    row = cms[..., -1, :].sum(axis=-1)
    out: FloatArray = np.divide(
        cms[..., -1, -1], row, out=np.full(row.shape, np.nan), where=row > 0
    )
    return out


def _per_task(grader: Ratings, reference: Ratings, task: npt.ArrayLike) -> dict[str, np.ndarray]:
    t = np.asarray(task)
    _, codes = np.unique(t, return_inverse=True)
    n_tasks = int(codes.max(initial=-1) + 1)
    g_tier, r_tier = as_float(grader.tier), as_float(reference.tier)
    members = [np.flatnonzero(codes == i) for i in range(n_tasks)]
    g_key, r_key = as_float(grader.key), as_float(reference.key)
    rank_stats = ranking.ranking_cluster_stats(
        ranking.pad_groups([r_key[m] for m in members]),
        ranking.pad_groups([g_key[m] for m in members]),
    )
    return {
        "confusions": cluster_confusions(r_tier, g_tier, codes, n_tasks, TIERS),
        "coincidences": cluster_coincidences(np.vstack([g_tier, r_tier]), codes, n_tasks),
        "ranking": rank_stats,
    }


def _specs(per_task: dict[str, np.ndarray]) -> dict[str, tuple[Statistic, np.ndarray]]:
    cms, rk = per_task["confusions"], per_task["ranking"]
    return {
        "kappa": (partial(kappa_from_confusions, weights="quadratic"), cms),
        "alpha": (alpha_from_coincidences, per_task["coincidences"]),
        "exact": (_exact, cms),
        "t3_recall": (_t3_recall, cms),
        "concordance": (ranking.concordance_from_sums, rk),
        "tau_b": (ranking.tau_from_sums, rk),
        "top1": (ranking.top1_from_sums, rk),
        "top1_chance": (ranking.top1_chance_from_sums, rk),
    }


def agreement_with_ci(
    grader: Ratings,
    reference: Ratings,
    task: npt.ArrayLike,
    *,
    n_resamples: int = 2000,
    confidence: float = 0.95,
    seed: Seed = None,
) -> dict[str, BootstrapCI]:
    """Every statistic of the module docstring with a task-bootstrap percentile interval."""
    specs = _specs(_per_task(grader, reference, task))
    return cluster_bootstrap_many(specs, n_resamples=n_resamples, confidence=confidence, seed=seed)


def _difference(
    f: Callable[[FloatArray], FloatArray], shape: tuple[int, ...], sums: FloatArray
) -> FloatArray:
    half = int(np.prod(shape))
    a = sums[:, :half].reshape(-1, *shape)
    b = sums[:, half:].reshape(-1, *shape)
    return f(a) - f(b)


def paired_difference_with_ci(
    grader: Ratings,
    baseline: Ratings,
    reference: Ratings,
    task: npt.ArrayLike,
    *,
    statistics: Sequence[str] = ("concordance", "kappa"),
    n_resamples: int = 2000,
    confidence: float = 0.95,
    seed: Seed = None,
) -> dict[str, BootstrapCI]:
    """statistic(grader) − statistic(baseline) against the same reference, paired by task."""
    a = _specs(_per_task(grader, reference, task))
    b = _specs(_per_task(baseline, reference, task))
    specs: dict[str, tuple[Statistic, np.ndarray]] = {}
    for name in statistics:
        f, per_a = a[name]
        _, per_b = b[name]
        n = per_a.shape[0]
        both = np.concatenate([per_a.reshape(n, -1), per_b.reshape(n, -1)], axis=1)
        specs[name] = (partial(_difference, f, per_a.shape[1:]), both)
    return cluster_bootstrap_many(specs, n_resamples=n_resamples, confidence=confidence, seed=seed)
