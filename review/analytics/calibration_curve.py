"""Calibration section of the dashboard: held-out error per configuration and the selected
configuration's curve (P(T1..T3) against weighted score, with binned human tier shares)."""

from __future__ import annotations

from typing import Any

import numpy as np

from review.analytics.arrays import GraderView
from review.analytics.frame import FloatArray, Frame
from review.stats import calibrate_tiers

CURVE_POINTS = 60
EMPIRICAL_BINS = 8


def _num(x: float | None) -> float | None:
    return None if x is None or not np.isfinite(x) else float(x)


def curve(score: FloatArray, human: FloatArray, task: Any) -> list[dict[str, float | None]]:
    """P(Tk | score) on a grid, from a fit on every labelled candidate.

    Grid points are passed to `calibrate_tiers` as unlabelled candidates, which it predicts from
    the fit on all labelled ones (the curve is the model, not the held-out predictions).
    """
    labelled = ~np.isnan(score) & ~np.isnan(human)
    if not labelled.any():
        return []
    lo, hi = float(np.min(score[labelled])), float(np.max(score[labelled]))
    grid = np.linspace(lo, hi, CURVE_POINTS) if hi > lo else np.array([lo])
    cal = calibrate_tiers(
        np.concatenate([score[labelled], grid]),
        np.concatenate([human[labelled], np.full(grid.size, np.nan)]),
        np.concatenate([np.asarray(task)[labelled], np.full(grid.size, -1)]),
    )
    if cal is None:
        return []
    probs = cal.probabilities[-grid.size :]
    return [
        {"score": float(s), "p_t1": float(p[0]), "p_t2": float(p[1]), "p_t3": float(p[2])}
        for s, p in zip(grid, probs, strict=True)
    ]


def empirical(score: FloatArray, human: FloatArray) -> list[dict[str, float]]:
    """Human consensus tier shares in score quantile bins: the dots the curve should pass near."""
    labelled = ~np.isnan(score) & ~np.isnan(human)
    s, h = score[labelled], human[labelled]
    if not s.size:
        return []
    edges = np.unique(np.quantile(s, np.linspace(0, 1, EMPIRICAL_BINS + 1)))
    which = np.clip(np.searchsorted(edges, s, side="right") - 1, 0, max(edges.size - 2, 0))
    rows = []
    for b in np.unique(which):
        m = which == b
        rows.append(
            {
                "score": float(s[m].mean()),
                "n": int(m.sum()),
                "t1": float(np.mean(h[m] == 1)),
                "t2": float(np.mean(h[m] == 2)),
                "t3": float(np.mean(h[m] == 3)),
            }
        )
    return rows


def calibration_section(
    frame: Frame, views: dict[int, GraderView], human: FloatArray, selected: int | None
) -> dict[str, Any]:
    per_config = []
    for cid, view in views.items():
        cal = calibrate_tiers(view.score, human, frame.task)
        per_config.append(
            {
                "config_id": cid,
                "name": frame.configs[cid],
                "n_scored": int((~np.isnan(view.score)).sum()),
                "n_labelled": cal.n_labelled if cal else 0,
                "n_folds": cal.n_folds if cal else 0,
                "held_out_mae": _num(cal.held_out_mae) if cal else None,
                "held_out_accuracy": _num(cal.held_out_accuracy) if cal else None,
                "reason": (cal.reason if cal else "no candidate both scored and reviewed") or "",
            }
        )
    chosen = views.get(selected) if selected is not None else None
    return {
        "per_config": per_config,
        "curve": curve(chosen.score, human, frame.task) if chosen else [],
        "empirical": empirical(chosen.score, human) if chosen else [],
    }
