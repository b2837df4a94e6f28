"""Turn a `Frame` into the exact arrays `review.stats` takes: rating matrices, consensus tiers,
padded per-group ordering keys, and one grader's view of the candidates.

Conventions (documented once, used by every page and export):
- A human "exploit / test tampering" label is not an ordinal tier: it is missing (NaN) in tier
  statistics and ranks below T3 in that reviewer's ordering.
- Consensus (the grader never votes): a majority of "exploit" labels → exploit (no tier); else
  one-coin Dawid–Skene where a candidate has 3+ tier ratings and 3+ reviewers rated anything in
  the slice, else the median tier (a split vote takes the worse tier).
- Human ordering key of a candidate: the mean over its reviewers of its average rank position in
  that reviewer's ordering of the group (tier, then rank in tier). Pairs the reviewers disagree
  on in opposite directions come out tied and leave the concordance denominator, as they should.
- A configuration's verdict on a group is its latest succeeded run (any replica), as for
  advantages; stability compares fixed (configuration, replica) series.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from review.analytics.frame import EXPLOIT_KEY_TIER, BoolArray, FloatArray, Frame, IntArray
from review.stats import dawid_skene_one_coin, median_tier

METHOD_NONE, METHOD_MEDIAN, METHOD_DS, METHOD_EXPLOIT = 0, 1, 2, 3
METHOD_NAMES = {METHOD_MEDIAN: "median", METHOD_DS: "dawid_skene", METHOD_EXPLOIT: "exploit"}


def human_matrix(frame: Frame) -> FloatArray:
    """``[reviewers, candidates]`` tiers, NaN where not rated or rated "exploit"."""
    out = np.full((len(frame.reviewers), frame.n), np.nan)
    out[frame.lab_reviewer, frame.lab_pos] = frame.lab_tier
    return out


def rating_slots(frame: Frame) -> FloatArray:
    """``[max ratings per candidate, candidates]``: the same ratings without reviewer identity.

    Krippendorff's alpha depends only on each unit's multiset of values, so this compact layout
    gives the same alpha as `human_matrix` while staying small when there are many reviewers.
    """
    order = np.argsort(frame.lab_pos, kind="stable")
    pos = frame.lab_pos[order]
    first = np.searchsorted(pos, pos, side="left")
    slot = np.arange(pos.size) - first
    width = int(slot.max(initial=-1)) + 1
    out = np.full((width, frame.n), np.nan)
    out[slot, pos] = frame.lab_tier[order]
    return out


@dataclass(frozen=True)
class Consensus:
    tier: FloatArray  # (n,) NaN = unreviewed or exploit
    method: IntArray  # METHOD_* codes
    n_reviews: IntArray
    n_exploit: IntArray


def consensus(frame: Frame) -> Consensus:
    n_reviews = np.bincount(frame.lab_pos, minlength=frame.n).astype(np.int64)
    n_exploit = np.bincount(frame.lab_pos, weights=frame.lab_exploit, minlength=frame.n).astype(
        np.int64
    )
    n_tiered = n_reviews - n_exploit
    ratings = human_matrix(frame).T  # (n, R)
    tier = median_tier(ratings) if frame.n else np.zeros(0)
    method = np.where(n_tiered > 0, METHOD_MEDIAN, METHOD_NONE)
    many = n_tiered >= 3
    if many.any():
        ds = dawid_skene_one_coin(ratings)
        if ds is not None:
            tier = np.where(many, ds.tier, tier)
            method = np.where(many, METHOD_DS, method)
    exploit = (n_reviews > 0) & (2 * n_exploit > n_reviews)
    tier = np.where(exploit, np.nan, tier)
    method = np.where(exploit, METHOD_EXPLOIT, method)
    return Consensus(tier, method.astype(np.int64), n_reviews, n_exploit)


@dataclass(frozen=True)
class Layout:
    """Where each candidate sits in the NaN-padded ``(groups, width)`` matrices of `ranking`."""

    row: IntArray
    slot: IntArray
    n_groups: int
    width: int
    group_task: IntArray
    group_step: IntArray

    def pad(self, values: FloatArray) -> FloatArray:
        out = np.full((self.n_groups, self.width), np.nan)
        out[self.row, self.slot] = values
        return out


def layout(group: IntArray, task: IntArray, step_index: IntArray) -> Layout:
    """Layout of candidates given in group order (as `load_frame` returns them, or any subset)."""
    n = group.size
    new = np.ones(n, dtype=bool)
    new[1:] = group[1:] != group[:-1]
    row = np.cumsum(new) - 1
    starts = np.flatnonzero(new)
    slot = np.arange(n) - starts[row] if n else np.zeros(0, dtype=np.int64)
    return Layout(
        row=row.astype(np.int64),
        slot=slot.astype(np.int64),
        n_groups=int(starts.size),
        width=int(slot.max(initial=-1)) + 1,
        group_task=task[starts],
        group_step=step_index[starts],
    )


def human_keys(frame: Frame) -> FloatArray:
    """(n,) mean within-group rank position over reviewers; NaN where unreviewed."""
    out = np.full(frame.n, np.nan)
    if not frame.lab_pos.size:
        return out
    tier = np.where(frame.lab_exploit, EXPLOIT_KEY_TIER, frame.lab_tier)
    key = tier * 1000 + np.nan_to_num(frame.lab_rank, nan=0.0)
    df = pd.DataFrame(
        {"pos": frame.lab_pos, "rev": frame.lab_reviewer, "grp": frame.group[frame.lab_pos]}
    )
    df["rank"] = pd.Series(key).groupby([df["rev"], df["grp"]]).rank(method="average")
    mean = df.groupby("pos")["rank"].mean()
    out[mean.index.to_numpy()] = mean.to_numpy()
    return out


@dataclass(frozen=True)
class GraderView:
    """One grader's judgement per candidate; NaN where it did not grade the candidate."""

    tier: FloatArray
    key: FloatArray
    score: FloatArray
    scores: FloatArray  # (n, 5)
    run: IntArray  # grader run id, -1 where none
    exploit: BoolArray  # the grader suspected an exploit (False where it did not grade)

    @property
    def graded(self) -> BoolArray:
        return ~np.isnan(self.tier)


def _view(frame: Frame, rows: IntArray) -> GraderView:
    tier = np.full(frame.n, np.nan)
    rank = np.full(frame.n, np.nan)
    score = np.full(frame.n, np.nan)
    scores = np.full((frame.n, frame.gr_scores.shape[1]), np.nan)
    run = np.full(frame.n, -1, dtype=np.int64)
    pos = frame.gr_pos[rows]
    tier[pos], rank[pos], score[pos] = (
        frame.gr_tier[rows],
        frame.gr_rank[rows],
        frame.gr_score[rows],
    )
    scores[pos], run[pos] = frame.gr_scores[rows], frame.gr_run[rows]
    exploit = np.zeros(frame.n, dtype=bool)
    exploit[pos] = frame.gr_exploit[rows]
    return GraderView(tier, tier * 1000 + rank, score, scores, run, exploit)


def config_view(frame: Frame, config_id: int) -> GraderView:
    """The configuration's latest succeeded run per group (the verdict advantages use)."""
    rows = np.flatnonzero(frame.gr_config == config_id)
    if not rows.size:
        return _view(frame, rows)
    grp = frame.group[frame.gr_pos[rows]]
    order = np.lexsort((frame.gr_run[rows], frame.gr_finished[rows], grp))
    last = np.ones(order.size, dtype=bool)
    last[:-1] = grp[order][1:] != grp[order][:-1]
    chosen = dict(
        zip(grp[order][last].tolist(), frame.gr_run[rows][order][last].tolist(), strict=True)
    )
    keep = rows[
        np.array(
            [chosen[g] == r for g, r in zip(grp.tolist(), frame.gr_run[rows].tolist(), strict=True)]
        )
    ]
    return _view(frame, keep)


def series_view(frame: Frame, config_id: int, replica: int) -> GraderView:
    rows = np.flatnonzero((frame.gr_config == config_id) & (frame.gr_replica == replica))
    return _view(frame, rows)
