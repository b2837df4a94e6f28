"""Fit the weights and tier cuts from human labels; evaluate with whole tasks held out.

One scikit-learn logistic regression fits both at once on a shared linear score s = w·x:

* **ordinal rows** (cumulative logit, proportional odds): for every label and k ∈ {1, 2},
  P(tier > k) = σ(s − cut_k); the cut columns are scaled by `CUT_SCALE` so the L2 penalty
  barely touches them;
* **pairwise rows**: for every pair of candidates a reviewer orders strictly within a group,
  P(a better than b) = σ(s_b − s_a), so within-tier ranks teach the weights too.

The two kinds of rows get equal total weight (`pair_share`). Weights must be non-negative (no
feature may raise a candidate): a feature that comes out negative is dropped and the rest refit,
until none is. Exploit features then get the policy floor (`model.policy_floor`). Everything is
deterministic (Newton-Cholesky, no randomness).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from sklearn.linear_model import LogisticRegression

from grading.grader.analysis.catalogue import NAMES
from grading.grader.analysis.model import LinearModel, policy_floor, rank

CUT_SCALE = 10.0


@dataclass(frozen=True)
class Sample:
    """One candidate of one task: its feature values and every reviewer's (tier, rank)."""

    task: str
    key: str
    values: Mapping[str, float]
    labels: Mapping[str, tuple[int, int]]
    size: int = 0  # changed lines (tie-break of equal scores)
    same: object = None  # normalised change: equal ones tie


@dataclass(frozen=True)
class Prediction:
    score: float
    tier: int
    rank_in_tier: int


def _design(
    samples: Sequence[Sample], features: Sequence[str], pair_share: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    x = np.array([[s.values.get(f, 0.0) for f in features] for s in samples], dtype=float)
    rows, ys, ws = [], [], []
    for i, s in enumerate(samples):
        for tier, _ in s.labels.values():
            for k in (1, 2):
                cut = np.zeros(2)
                cut[k - 1] = -CUT_SCALE
                rows.append(np.concatenate([x[i], cut]))
                ys.append(1 if tier > k else 0)
                ws.append(1.0)
    n_ordinal = len(rows)
    by_task: dict[str, list[int]] = defaultdict(list)
    for i, s in enumerate(samples):
        by_task[s.task].append(i)
    pairs = []
    for members in by_task.values():
        raters = {r for i in members for r in samples[i].labels}
        for r in sorted(raters):
            rated = [i for i in members if r in samples[i].labels]
            for a in rated:
                for b in rated:
                    if samples[a].labels[r] < samples[b].labels[r]:
                        pairs.append((a, b))
    for a, b in pairs:
        diff = np.concatenate([x[b] - x[a], np.zeros(2)])
        rows += [diff, -diff]
        ys += [1, 0]
    if pairs:
        share = pair_share / (1 - pair_share) if pair_share < 1 else 1.0
        ws += [share * n_ordinal / (2 * len(pairs))] * (2 * len(pairs))
    return np.array(rows), np.array(ys), np.array(ws)


def fit_model(
    samples: Sequence[Sample],
    *,
    features: Sequence[str] = NAMES,
    c: float = 1.0,
    pair_share: float = 0.5,
) -> LinearModel:
    """Non-negative weights and ordered cuts from the labelled samples (see module docstring)."""
    active = [f for f in features if any(s.values.get(f, 0.0) for s in samples)]
    while True:
        z, y, w = _design(samples, active, pair_share)
        if len(set(y.tolist())) < 2:
            raise ValueError("the labels use a single tier: nothing to fit")
        lr = LogisticRegression(
            C=c, fit_intercept=False, solver="newton-cholesky", max_iter=1000, tol=1e-10
        )
        lr.fit(z, y, sample_weight=w)
        coef = lr.coef_[0]
        weights, cuts = coef[: len(active)], coef[len(active) :] * CUT_SCALE
        if active and weights.min() < -1e-9:
            active.pop(int(np.argmin(weights)))
            continue
        break
    # Rounded so the artefact reads the same on every machine (BLAS may differ in the last bits).
    low, high = sorted(round(float(v), 6) for v in cuts)
    model = LinearModel(
        {f: round(max(float(weights[active.index(f)]), 0.0), 6) if f in active else 0.0
         for f in features},
        (low, high),
    )  # fmt: skip
    return policy_floor(model)


def predict(model: LinearModel, samples: Sequence[Sample]) -> dict[str, Prediction]:
    """Tier and rank of one task's candidates (keys must be distinct)."""
    scores = [model.score(s.values) for s in samples]
    tiers = [model.tier(v) for v in scores]
    ranks = rank(scores, tiers, [s.size for s in samples],
                 [s.same if s.same is not None else s.key for s in samples])  # fmt: skip
    return {s.key: Prediction(scores[i], tiers[i], ranks[i]) for i, s in enumerate(samples)}


def leave_one_task_out(
    samples: Sequence[Sample], **settings: object
) -> dict[tuple[str, str], Prediction]:
    """Predictions for every task from a model fitted on all the other tasks."""
    tasks = sorted({s.task for s in samples})
    out: dict[tuple[str, str], Prediction] = {}
    for held in tasks:
        train = [s for s in samples if s.task != held]
        model = fit_model(train, **settings)  # type: ignore[arg-type]
        test = [s for s in samples if s.task == held]
        for key, p in predict(model, test).items():
            out[(held, key)] = p
    return out


def tasks_of(samples: Iterable[Sample]) -> list[str]:
    return sorted({s.task for s in samples})
