"""Blind audit of two runs or checkpoints (the articles' 30-task audit): tier distribution,
mean weighted quality and the pairwise win rate of their passing candidates on shared tasks.

Judged by the human consensus (quality = the mean rubric score over reviewers) or by one grader
configuration (its tier and weighted score). A side is a run, or one step of it ("run@step").
The tier distribution counts every candidate with a tier; quality and the win rate those that
also have a quality (a rubric score left pre-filled from the tier is not one).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from review.analytics.agreement_dashboard import ci_json, num
from review.analytics.arrays import config_view, consensus
from review.analytics.filters import Filters
from review.analytics.frame import BoolArray, FloatArray, Frame, load_frame
from review.stats import AuditCandidate, audit_two_runs

HUMANS = "humans"


def parse_side(value: str) -> Filters:
    run, _, step = value.partition("@")
    return Filters(run=run or None, step=int(step) if step else None)


def _human_quality(frame: Frame) -> FloatArray:
    """Mean over a candidate's reviewers of their mean rubric score (1-5); NaN if none."""
    scores = frame.lab_scores  # (m, 5), NaN where missing or left pre-filled
    n_set = (~np.isnan(scores)).sum(axis=1)
    # A label with no score of its own (none given, or all left pre-filled) has no mean.
    per_label = np.divide(
        np.nansum(scores, axis=1), n_set, out=np.full(n_set.size, np.nan), where=n_set > 0
    )
    ok = ~np.isnan(per_label)
    total = np.bincount(frame.lab_pos[ok], weights=per_label[ok], minlength=frame.n)
    count = np.bincount(frame.lab_pos[ok], minlength=frame.n)
    return np.divide(total, count, out=np.full(frame.n, np.nan), where=count > 0)


# Why a candidate with a tier has no quality: every rubric score its reviewers gave was left as
# the tier pre-filled it (a tier's typical scores are no judgement of quality), or none at all.
NO_QUALITY_PREFILLED = "prefilled"
NO_QUALITY_UNSCORED = "unscored"
NO_QUALITY_REASONS = {
    NO_QUALITY_PREFILLED: "rubric scores left pre-filled from the tier, not confirmed",
    NO_QUALITY_UNSCORED: "no rubric scores",
}


def _any_prefilled(frame: Frame) -> BoolArray:
    """Per candidate: at least one of its labels holds a score left pre-filled."""
    per_label = frame.lab_prefilled.any(axis=1) if frame.lab_prefilled.size else np.zeros(0)
    return np.bincount(frame.lab_pos[per_label], minlength=frame.n) > 0


def _candidates(side: str, source: str) -> tuple[list[AuditCandidate], dict[str, int]]:
    """The side's candidates with a tier (quality None where unknown), and how many of them
    have no quality, by reason (`NO_QUALITY_REASONS`)."""
    frame = load_frame(parse_side(side))
    if source == HUMANS:
        tier, quality = consensus(frame).tier, _human_quality(frame)
        prefilled = _any_prefilled(frame)
    else:
        view = config_view(frame, int(source))
        tier, quality = view.tier, view.score
        prefilled = np.zeros(frame.n, dtype=bool)
    keep = np.flatnonzero(~np.isnan(tier))
    missing = keep[np.isnan(quality[keep])]
    n_prefilled = int(prefilled[missing].sum())
    no_quality = {
        NO_QUALITY_PREFILLED: n_prefilled,
        NO_QUALITY_UNSCORED: int(missing.size) - n_prefilled,
    }
    cands = [
        AuditCandidate(
            run=side,
            task=int(frame.task_ids[frame.task[i]]),
            tier=int(tier[i]),
            quality=None if np.isnan(quality[i]) else float(quality[i]),
        )
        for i in keep
    ]
    return cands, no_quality


def audit_payload(*, params: dict[str, Any]) -> dict[str, Any]:
    extra = params["extra"]
    a, b, source = extra["a"], extra["b"], extra["source"]
    (cands_a, missing_a), (cands_b, missing_b) = _candidates(a, source), _candidates(b, source)
    cands = cands_a + cands_b
    result = audit_two_runs(cands, a, b, n_resamples=params["n_resamples"], seed=20240611)
    sides = []
    for side, no_quality in ((a, missing_a), (b, missing_b)):
        mine = [c for c in cands if c.run == side]
        sides.append(
            {
                "side": side,
                "n_candidates": len(mine),
                "n_tasks": len({c.task for c in mine}),
                "tier_share": {f"T{t}": result.tier_share[side][t] for t in (1, 2, 3)},
                "mean_quality": num(result.mean_quality[side]),
                "n_with_quality": result.n_with_quality[side],
                # Candidates in the tier distribution but not in quality, by reason.
                "n_no_quality": sum(no_quality.values()),
                "no_quality": no_quality,
            }
        )
    return {
        "schema": "gagar.audit.v1",
        "a": a,
        "b": b,
        "source": source,
        "n_resamples": params["n_resamples"],
        "sides": sides,
        "no_quality_reasons": NO_QUALITY_REASONS,
        "win_rate": ci_json(result.win_rate),
        "n_pairs": result.n_pairs,
        "n_shared_tasks": result.n_tasks,
    }
