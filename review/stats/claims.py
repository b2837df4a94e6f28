"""Claim precision: how often the grader's cited code says what the grader claims it says.

Reviewers mark each claim (a `code` evidence cited by one judgement) correct, wrong or "can't
tell". Precision = correct / (correct + wrong); "can't tell" marks are counted and reported but
are not in the denominator (the reviewer could not judge, which says nothing either way).
Claims of one task share its repository, grader run and reviewers, so the 95% interval
resamples tasks (`cluster_bootstrap_many`), with every group's precision drawn from the same
task resamples.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from review.stats._types import BoolArray, FloatArray, IntArray
from review.stats.bootstrap import BootstrapCI, Seed, cluster_bootstrap_many


@dataclass(frozen=True)
class ClaimPrecision:
    group: int  # index into the caller's groups (e.g. criteria); -1 for all claims together
    n_marked: int
    n_correct: int
    n_wrong: int
    n_unsure: int
    precision: BootstrapCI


def _ratio(sums: FloatArray) -> FloatArray:
    # sums: (B, 2) = (correct, correct + wrong) per resample; undefined where nothing judged.
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(sums[:, 1] > 0, sums[:, 0] / sums[:, 1], np.nan)


def claim_precision(
    *,
    task: IntArray,
    group: IntArray,
    correct: BoolArray,
    wrong: BoolArray,
    n_groups: int,
    n_resamples: int = 2000,
    confidence: float = 0.95,
    seed: Seed = None,
) -> tuple[list[ClaimPrecision], ClaimPrecision]:
    """Precision per group (0..n_groups-1) and over all marks, intervals resampling tasks.

    One row per mark: its dense task index, its group, whether it says correct or wrong
    (neither: "can't tell").
    """
    task = np.asarray(task, dtype=np.int64)
    group = np.asarray(group, dtype=np.int64)
    correct = np.asarray(correct, dtype=np.bool_)
    wrong = np.asarray(wrong, dtype=np.bool_)
    if np.any(correct & wrong):
        raise ValueError("a mark cannot be both correct and wrong")
    _, dense = np.unique(task, return_inverse=True)
    n_tasks = int(dense.max()) + 1 if dense.size else 0
    # per_task[t, g] = (correct, judged) of group g in task t; column n_groups is "all".
    judged = correct | wrong
    width = n_groups + 1
    cells = n_tasks * width
    per_task = np.zeros((n_tasks, width, 2), dtype=np.float64)
    for g_idx in (group, np.full_like(group, n_groups)):
        flat = dense.astype(np.int64) * width + g_idx
        per_task[:, :, 0] += np.bincount(flat, weights=correct, minlength=cells).reshape(
            n_tasks, width
        )
        per_task[:, :, 1] += np.bincount(flat, weights=judged, minlength=cells).reshape(
            n_tasks, width
        )
    cis = cluster_bootstrap_many(
        {str(g): (_ratio, per_task[:, g, :]) for g in range(n_groups + 1)},
        n_resamples=n_resamples,
        confidence=confidence,
        seed=seed,
    )

    def row(g: int, sel: BoolArray) -> ClaimPrecision:
        ci = cis[str(g)]
        # The interval counts the tasks where this group has marks, not every task in the slice.
        tasks_here = int(np.unique(dense[sel]).size)
        ci = BootstrapCI(
            ci.estimate,
            ci.low,
            ci.high,
            ci.standard_error,
            ci.confidence,
            ci.method,
            ci.n_resamples,
            ci.n_valid,
            tasks_here,
        )
        return ClaimPrecision(
            group=-1 if g == n_groups else g,
            n_marked=int(sel.sum()),
            n_correct=int((correct & sel).sum()),
            n_wrong=int((wrong & sel).sum()),
            n_unsure=int((~judged & sel).sum()),
            precision=ci,
        )

    per_group = [row(g, group == g) for g in range(n_groups)]
    overall = row(n_groups, np.ones(group.shape, dtype=np.bool_))
    return per_group, overall


def precision_point(correct: Sequence[bool], wrong: Sequence[bool]) -> float | None:
    """The plain estimate, for a check by hand: correct / (correct + wrong)."""
    c, w = sum(map(bool, correct)), sum(map(bool, wrong))
    return c / (c + w) if c + w else None
