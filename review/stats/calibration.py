"""Calibrate a grader's weighted score to human tiers, cross-validated by task.

Model: one isotonic regression per threshold, F_k(s) = P(tier ≤ k | score s) for k = 1 … K-1,
each non-decreasing in s (a higher weighted score means a better, i.e. lower, tier). Stacking the
thresholds and taking a running maximum over k keeps F_1 ≤ F_2 ≤ …, so
P(T1) = F_1, P(Tk) = F_k - F_{k-1}, P(TK) = 1 - F_{K-1} are non-negative and sum to 1.

The calibrated tier is the **median** of that distribution (smallest k with F_k ≥ 0.5): tiers are
ordinal, and the median minimises expected absolute tier error, the error we report.

Held-out error comes from ``GroupKFold`` over tasks, so no task is in both the fit and the
evaluation. Every candidate — reviewed or not — gets a calibrated tier: reviewed ones from the
fold that held them out, unreviewed ones from a fit on all reviewed candidates. Fit once per
grader configuration.
"""

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
from sklearn.isotonic import IsotonicRegression
from sklearn.model_selection import GroupKFold

from review.stats._types import FloatArray, as_float


@dataclass(frozen=True)
class Calibration:
    """Per-candidate calibrated tiers/probabilities and the held-out error by task."""

    probabilities: FloatArray  # (n, K): P(T1) … P(TK); NaN rows where the score is missing
    tier: FloatArray  # (n,) calibrated tier (median of the distribution), NaN if no score
    held_out_mae: float | None  # mean |calibrated - human tier| on held-out tasks
    held_out_accuracy: float | None
    n_folds: int
    n_labelled: int
    reason: str | None = None  # why held-out error is missing, if it is


def _fit_predict(
    score: FloatArray, tier: FloatArray, query: FloatArray, n_tiers: int
) -> FloatArray:
    cdf = np.empty((query.size, n_tiers - 1))
    for k in range(1, n_tiers):
        iso = IsotonicRegression(y_min=0.0, y_max=1.0, increasing=True, out_of_bounds="clip")
        iso.fit(score, (tier <= k).astype(np.float64))
        cdf[:, k - 1] = iso.predict(query)
    # Independent isotonic fits can cross; the running max restores F_1 ≤ F_2 ≤ ….
    cdf = np.maximum.accumulate(np.clip(cdf, 0.0, 1.0), axis=1)
    full = np.hstack([np.zeros((query.size, 1)), cdf, np.ones((query.size, 1))])
    return np.diff(full, axis=1)


def _median_tier(probabilities: FloatArray) -> FloatArray:
    cdf = np.cumsum(probabilities, axis=1)
    return (np.argmax(cdf >= 0.5 - 1e-12, axis=1) + 1).astype(np.float64)


def calibrate_tiers(
    score: npt.ArrayLike,
    human_tier: npt.ArrayLike,
    task: npt.ArrayLike,
    *,
    n_tiers: int = 3,
    n_splits: int = 5,
) -> Calibration | None:
    """Map grader weighted scores to human (consensus) tiers; ``human_tier`` NaN = unreviewed.

    Returns ``None`` when no candidate has both a score and a human tier.
    """
    s, y = as_float(score), as_float(human_tier)
    groups = np.asarray(task)
    has_score = ~np.isnan(s)
    labelled = has_score & ~np.isnan(y)
    if not labelled.any():
        return None
    probs = np.full((s.size, n_tiers), np.nan)
    fit_s, fit_y = s[labelled], y[labelled]
    unlabelled = has_score & ~labelled
    if unlabelled.any():
        probs[unlabelled] = _fit_predict(fit_s, fit_y, s[unlabelled], n_tiers)

    folds = min(n_splits, len(np.unique(groups[labelled])))
    if folds < 2:
        # Nothing to hold out: fit in-sample so every candidate still gets a label.
        probs[labelled] = _fit_predict(fit_s, fit_y, fit_s, n_tiers)
        tier = np.where(has_score, _median_tier(np.nan_to_num(probs)), np.nan)
        return Calibration(
            probs,
            tier,
            None,
            None,
            0,
            int(labelled.sum()),
            "fewer than two reviewed tasks: no held-out error",
        )

    idx = np.flatnonzero(labelled)
    held = np.empty((idx.size, n_tiers))
    for train, test in GroupKFold(n_splits=folds).split(fit_s, fit_y, groups[labelled]):
        held[test] = _fit_predict(fit_s[train], fit_y[train], fit_s[test], n_tiers)
    probs[idx] = held
    tier = np.where(has_score, _median_tier(np.nan_to_num(probs)), np.nan)
    err = tier[idx] - fit_y
    return Calibration(
        probabilities=probs,
        tier=tier,
        held_out_mae=float(np.mean(np.abs(err))),
        held_out_accuracy=float(np.mean(err == 0)),
        n_folds=folds,
        n_labelled=int(idx.size),
    )
