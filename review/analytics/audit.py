"""Blind audit of two runs or checkpoints (the articles' 30-task audit): tier distribution,
mean weighted quality and the pairwise win rate of their passing candidates on shared tasks.

Judged by the human consensus (quality = the mean rubric score over reviewers) or by one grader
configuration (its tier and weighted score). A side is a run, or one step of it ("run@step").
"""

from __future__ import annotations

from typing import Any

import numpy as np

from review.analytics.agreement_dashboard import ci_json, num
from review.analytics.arrays import config_view, consensus
from review.analytics.filters import Filters
from review.analytics.frame import FloatArray, Frame, load_frame
from review.stats import AuditCandidate, audit_two_runs

HUMANS = "humans"


def parse_side(value: str) -> Filters:
    run, _, step = value.partition("@")
    return Filters(run=run or None, step=int(step) if step else None)


def _human_quality(frame: Frame) -> FloatArray:
    """Mean over a candidate's reviewers of their mean rubric score (1-5); NaN if none."""
    per_label = (
        np.nanmean(np.where(np.isnan(frame.lab_scores), np.nan, frame.lab_scores), axis=1)
        if frame.lab_scores.size
        else np.zeros(0)
    )
    ok = ~np.isnan(per_label)
    total = np.bincount(frame.lab_pos[ok], weights=per_label[ok], minlength=frame.n)
    count = np.bincount(frame.lab_pos[ok], minlength=frame.n)
    return np.divide(total, count, out=np.full(frame.n, np.nan), where=count > 0)


def _candidates(side: str, source: str) -> list[AuditCandidate]:
    frame = load_frame(parse_side(side))
    if source == HUMANS:
        tier, quality = consensus(frame).tier, _human_quality(frame)
    else:
        view = config_view(frame, int(source))
        tier, quality = view.tier, view.score
    keep = np.flatnonzero(~np.isnan(tier) & ~np.isnan(quality))
    return [
        AuditCandidate(
            run=side,
            task=int(frame.task_ids[frame.task[i]]),
            tier=int(tier[i]),
            quality=float(quality[i]),
        )
        for i in keep
    ]


def audit_payload(*, params: dict[str, Any]) -> dict[str, Any]:
    extra = params["extra"]
    a, b, source = extra["a"], extra["b"], extra["source"]
    cands = _candidates(a, source) + _candidates(b, source)
    result = audit_two_runs(cands, a, b, n_resamples=params["n_resamples"], seed=20240611)
    sides = []
    for side in (a, b):
        mine = [c for c in cands if c.run == side]
        sides.append(
            {
                "side": side,
                "n_candidates": len(mine),
                "n_tasks": len({c.task for c in mine}),
                "tier_share": {f"T{t}": result.tier_share[side][t] for t in (1, 2, 3)},
                "mean_quality": num(result.mean_quality[side]),
            }
        )
    return {
        "schema": "gagar.audit.v1",
        "a": a,
        "b": b,
        "source": source,
        "n_resamples": params["n_resamples"],
        "sides": sides,
        "win_rate": ci_json(result.win_rate),
        "n_pairs": result.n_pairs,
        "n_shared_tasks": result.n_tasks,
    }
