"""The gate table: one grader's tiers and ranks against people, beside the ceiling and the floor.

Rows (every statistic of `gate.py`, task-bootstrap intervals):

* the grader against the reviewers' consensus (median tier, a split rounding to the worse tier;
  mean ordering key) and against each reviewer;
* each reviewer against each other one: the ceiling;
* "smaller diff is better" (each group ordered by changed lines, equal sizes tied; the smallest
  third T1, the middle third T2, the largest third T3) and random orders and tiers (the mean of
  `draws` draws, tiers in the consensus's shares) against the consensus: the floor.

Candidates are `fit.Sample`s (task, key, labels by reviewer, changed lines); a grader is a map
(task, key) → (tier, rank in tier). A candidate the grader did not grade counts as not rated.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from grading.grader.analysis.fit import Sample
from grading.grader.analysis.fit_default import consensus
from review.stats.bootstrap import BootstrapCI
from review.stats.gate import Ratings, agreement_with_ci

Preds = Mapping[tuple[str, str], tuple[int, int]]  # (task, key) -> (tier, rank in tier)
CONSENSUS = "consensus"
SMALLER_DIFF = "smaller diff"
RANDOM = "random"
# What a threshold may name, and which way it points (all: higher is better).
GATED = ("kappa", "concordance", "t3_recall", "alpha", "exact", "tau_b", "top1")


@dataclass(frozen=True)
class GateRow:
    grader: str
    reference: str
    n: int  # candidates both rated
    stats: Mapping[str, BootstrapCI]

    def estimate(self, name: str) -> float | None:
        ci = self.stats.get(name)
        return ci.estimate if ci is not None else None

    def as_json(self) -> dict[str, object]:
        return {
            "grader": self.grader,
            "reference": self.reference,
            "n": self.n,
            "stats": {
                k: {"estimate": ci.estimate, "low": ci.low, "high": ci.high}
                for k, ci in self.stats.items()
            },
        }


def _key(tier: float, rank: float) -> float:
    return tier * 1000 + rank


def consensus_ratings(samples: Sequence[Sample]) -> Ratings:
    cons = [consensus(s) if s.labels else (np.nan, np.nan) for s in samples]
    return Ratings([c[0] for c in cons], [c[1] for c in cons])


def rater_ratings(samples: Sequence[Sample], name: str) -> Ratings:
    labs = [s.labels.get(name) for s in samples]
    return Ratings(
        [lab[0] if lab else np.nan for lab in labs],
        [_key(*lab) if lab else np.nan for lab in labs],
    )


def pred_ratings(samples: Sequence[Sample], preds: Preds) -> Ratings:
    got = [preds.get((s.task, s.key)) for s in samples]
    return Ratings([p[0] if p else np.nan for p in got], [_key(*p) if p else np.nan for p in got])


def smaller_diff(samples: Sequence[Sample]) -> dict[tuple[str, str], tuple[int, int]]:
    """The issue's baseline: order by changed lines (equal sizes share a rank), tiers by thirds."""
    out: dict[tuple[str, str], tuple[int, int]] = {}
    for task in sorted({s.task for s in samples}):
        group = [s for s in samples if s.task == task]
        tier = {s.key: 1 + min(2, 3 * sum(o.size < s.size for o in group) // len(group))
                for s in group}  # fmt: skip
        for s in group:
            sizes = {o.size for o in group if tier[o.key] == tier[s.key]}
            out[(task, s.key)] = (tier[s.key], 1 + sum(v < s.size for v in sizes))
    return out


def random_mean(samples: Sequence[Sample], draws: int = 200, seed: int = 0) -> dict[str, float]:
    """Mean point figures of random tiers (in the consensus's shares) and random orders."""
    rng = np.random.default_rng(seed)
    cons = consensus_ratings(samples)
    tiers = np.asarray(cons.tier, dtype=float)
    rated = tiers[~np.isnan(tiers)].astype(int)
    if not len(rated):
        return {}
    shares = np.bincount(rated, minlength=4)[1:] / len(rated)
    tasks = [s.task for s in samples]
    totals: dict[str, list[float]] = {}
    for _ in range(draws):
        tier = rng.choice([1, 2, 3], size=len(samples), p=shares)
        key = tier * 1000 + rng.permutation(len(samples))
        stats = agreement_with_ci(Ratings(tier, key), cons, tasks, n_resamples=1, seed=0)
        for name, ci in stats.items():
            if ci.estimate is not None:
                totals.setdefault(name, []).append(ci.estimate)
    return {name: float(np.mean(v)) for name, v in totals.items()}


def _row(
    name: str, ref_name: str, grader: Ratings, ref: Ratings, tasks: list[str], n_resamples: int,
    seed: int,
) -> GateRow:  # fmt: skip
    both = ~np.isnan(np.asarray(grader.tier, dtype=float)) & ~np.isnan(
        np.asarray(ref.tier, dtype=float)
    )
    stats = agreement_with_ci(grader, ref, tasks, n_resamples=n_resamples, seed=seed)
    return GateRow(name, ref_name, int(both.sum()), stats)


def gate_table(
    samples: Sequence[Sample],
    preds: Preds,
    *,
    grader: str,
    n_resamples: int = 2000,
    seed: int = 0,
    draws: int = 200,
) -> tuple[list[GateRow], dict[str, float]]:
    """(rows, the random baseline's mean point figures against the consensus)."""
    if not samples:
        raise ValueError("no labelled candidates to measure against")
    tasks = [s.task for s in samples]
    raters = sorted({r for s in samples for r in s.labels})
    cons = consensus_ratings(samples)
    mine = pred_ratings(samples, preds)
    rows = [_row(grader, CONSENSUS, mine, cons, tasks, n_resamples, seed)]
    rows += [
        _row(grader, r, mine, rater_ratings(samples, r), tasks, n_resamples, seed) for r in raters
    ]
    for a, b in itertools.combinations(raters, 2):
        ra, rb = rater_ratings(samples, a), rater_ratings(samples, b)
        rows.append(_row(b, a, rb, ra, tasks, n_resamples, seed))
    small = pred_ratings(samples, smaller_diff(samples))
    rows.append(_row(SMALLER_DIFF, CONSENSUS, small, cons, tasks, n_resamples, seed))
    return rows, random_mean(samples, draws=draws, seed=seed)


def threshold_failures(
    figures: Mapping[str, float | None], thresholds: Mapping[str, float]
) -> list[str]:
    """The thresholds a grader's point figures (against the consensus) do not meet."""
    out = []
    for name, minimum in sorted(thresholds.items()):
        if name not in GATED:
            raise ValueError(f"unknown gate statistic {name!r}; expected one of {GATED}")
        value = figures.get(name)
        if value is None or not np.isfinite(value) or value < minimum:
            shown = "undefined" if value is None else f"{value:.3f}"
            out.append(f"{name} {shown} < {minimum:g}")
    return out
