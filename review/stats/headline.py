"""The dashboard's headline agreement set with task-bootstrap CIs, on shared resamples.

κ and raw agreement (grader tier vs human consensus tier), ordinal alpha among humans (and with the
grader as one extra rater), pooled pairwise concordance, mean τ-b and top-1 agreement with its
chance level; and, separately, κ per rubric criterion (grader vs each reviewer). All are computed
from per-task sums, so 2,000 resamples cost a few matrix products.
"""

from collections.abc import Sequence
from functools import partial

import numpy as np
import numpy.typing as npt

from review.stats import ranking
from review.stats._types import FloatArray, Weights, as_float
from review.stats.agreement import (
    RUBRIC,
    TIERS,
    alpha_from_coincidences,
    cluster_coincidences,
    cluster_confusions,
    kappa_from_confusions,
)
from review.stats.bootstrap import BootstrapCI, Method, Seed, Statistic, cluster_bootstrap_many


def _raw_from_confusions(cms: FloatArray) -> FloatArray:
    n = cms.sum(axis=(-2, -1))
    diag = np.trace(cms, axis1=-2, axis2=-1)
    out: FloatArray = np.divide(diag, n, out=np.full(n.shape, np.nan), where=n > 0)
    return out


def _by_task(per_group: FloatArray, group_task: npt.NDArray[np.int64], n_tasks: int) -> FloatArray:
    out = np.zeros((n_tasks, *per_group.shape[1:]))
    np.add.at(out, group_task, per_group)
    return out


def headline_with_ci(
    *,
    grader_tier: npt.ArrayLike,
    consensus_tier: npt.ArrayLike,
    human_ratings: npt.ArrayLike,
    candidate_task: npt.ArrayLike,
    human_keys: npt.ArrayLike,
    grader_keys: npt.ArrayLike,
    group_task: npt.ArrayLike,
    n_resamples: int = 2000,
    confidence: float = 0.95,
    seed: Seed = None,
    method: Method = "percentile",
    weights: Weights = "quadratic",
) -> dict[str, BootstrapCI]:
    """Headline statistics with CIs from one shared task bootstrap.

    Per candidate (length n): ``grader_tier``, ``consensus_tier`` (NaN = unreviewed),
    ``candidate_task`` (0-based task index); ``human_ratings`` is ``[reviewers, n]`` with NaN where
    a reviewer did not rate. Per group (rows): ``human_keys``/``grader_keys`` padded ordering keys
    (lower is better, see ``ranking``) and ``group_task``. Returned keys: ``kappa``,
    ``raw_agreement``, ``alpha_humans``, ``alpha_with_grader``, ``concordance``, ``tau_b``,
    ``top1``, ``top1_chance``.
    """
    cand_task = np.asarray(candidate_task, dtype=np.int64)
    grp_task = np.asarray(group_task, dtype=np.int64)
    n_tasks = int(max(cand_task.max(initial=-1), grp_task.max(initial=-1)) + 1)
    confusions = cluster_confusions(grader_tier, consensus_tier, cand_task, n_tasks, TIERS)
    humans = as_float(human_ratings)
    with_grader = np.vstack([humans, as_float(grader_tier)[None, :]])
    rank_stats = _by_task(ranking.ranking_cluster_stats(human_keys, grader_keys), grp_task, n_tasks)

    # Each entry: (statistic of summed per-task arrays, per-task arrays).
    specs: dict[str, tuple[Statistic, npt.ArrayLike]] = {
        "kappa": (partial(kappa_from_confusions, weights=weights), confusions),
        "raw_agreement": (_raw_from_confusions, confusions),
        "alpha_humans": (
            alpha_from_coincidences,
            cluster_coincidences(humans, cand_task, n_tasks),
        ),
        "alpha_with_grader": (
            alpha_from_coincidences,
            cluster_coincidences(with_grader, cand_task, n_tasks),
        ),
        "concordance": (ranking.concordance_from_sums, rank_stats),
        "tau_b": (ranking.tau_from_sums, rank_stats),
        "top1": (ranking.top1_from_sums, rank_stats),
        "top1_chance": (ranking.top1_chance_from_sums, rank_stats),
    }
    return cluster_bootstrap_many(
        specs, n_resamples=n_resamples, confidence=confidence, seed=seed, method=method
    )


def kappa_with_ci(
    *,
    a: npt.ArrayLike,
    b: npt.ArrayLike,
    item_task: npt.ArrayLike,
    labels: Sequence[int] = TIERS,
    n_resamples: int = 2000,
    confidence: float = 0.95,
    seed: Seed = None,
    method: Method = "percentile",
    weights: Weights = "quadratic",
) -> BootstrapCI:
    """Cohen's κ of paired ratings ``a``/``b`` (e.g. `rating_pairs` of the human labels) with a
    CI resampling the items' tasks; the estimate equals ``sklearn.metrics.cohen_kappa_score(a,
    b, weights=weights, labels=labels)``."""
    task = np.asarray(item_task, dtype=np.int64)
    n_tasks = int(task.max(initial=-1) + 1)
    confusions = cluster_confusions(a, b, task, n_tasks, labels)
    return cluster_bootstrap_many(
        {"kappa": (partial(kappa_from_confusions, weights=weights), confusions)},
        n_resamples=n_resamples,
        confidence=confidence,
        seed=seed,
        method=method,
    )["kappa"]


def criterion_kappas_with_ci(
    *,
    grader_scores: npt.ArrayLike,
    human_scores: npt.ArrayLike,
    item_task: npt.ArrayLike,
    criteria: Sequence[str],
    n_resamples: int = 2000,
    confidence: float = 0.95,
    seed: Seed = None,
    method: Method = "percentile",
    weights: Weights = "quadratic",
) -> dict[str, BootstrapCI]:
    """κ per rubric criterion (scores 1-5) with CIs from one shared task bootstrap.

    ``grader_scores``/``human_scores`` have shape ``(items, criteria)`` with NaN for a missing
    score; an item is one (reviewer, candidate) label next to the grader's scores of that
    candidate, and ``item_task`` is its 0-based task index. Per criterion, items missing either
    score are dropped (as ``criterion_kappas`` drops them), so a task whose items lack one
    criterion is still drawn but adds nothing to that criterion's confusion matrix. The estimates
    equal ``criterion_kappas``; a criterion with no scored pair or a degenerate κ (both sides on
    one shared score) gets ``estimate=None`` and no interval.
    """
    grader, human = as_float(grader_scores), as_float(human_scores)
    task = np.asarray(item_task, dtype=np.int64)
    n_tasks = int(task.max(initial=-1) + 1)
    kappa = partial(kappa_from_confusions, weights=weights)
    # All criteria share the resamples, so their intervals are jointly consistent (as in the
    # headline set) and the tasks are drawn once.
    specs: dict[str, tuple[Statistic, npt.ArrayLike]] = {
        name: (kappa, cluster_confusions(grader[:, j], human[:, j], task, n_tasks, RUBRIC))
        for j, name in enumerate(criteria)
    }
    return cluster_bootstrap_many(
        specs, n_resamples=n_resamples, confidence=confidence, seed=seed, method=method
    )
