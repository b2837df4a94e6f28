"""Fit the weights and tier cuts from human labels; evaluate with whole tasks held out.

One penalised logistic likelihood fits both at once on the model's linear scores (`model.py`):

* **ordinal rows** (cumulative logit): for every label, P(tier > 1) = σ(score − cut_1) and
  P(tier > 2) = σ(severe − cut_2), where `severe` leaves out noise and style (`max_tier=2`):
  a partial proportional-odds model, so those features can teach T2 but never T3;
* **pairwise rows**: for every pair of candidates a reviewer orders strictly within a group,
  P(a better than b) = σ(score_b − score_a), so within-tier ranks teach the weights too.

The two kinds of rows get equal total weight (`pair_share`). The penalty shrinks every weight
towards the weight of its kind (its catalogue group) rather than towards zero:

    Σ_j (w_j − a_kind(j))² / 2C  +  Σ_kind a_kind² / (2C · group_scale²)
                                 +  Σ_k cut_k² / (2C · CUT_SCALE²)

with w_j ≥ 0 (no feature may raise a candidate) and a_kind ≥ 0. A feature the training labels
never show (a hook call removed, a signature changed: rare on 16 tasks, common enough on the
next ones) thus gets the typical weight of its kind instead of nothing, and a rare one is pulled
towards it; `group_scale = 0` shrinks towards zero instead (plain L2). Bounded L-BFGS-B from a
zero start: deterministic. Exploit features then get the policy floor (`model.policy_floor`).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from scipy.optimize import minimize
from scipy.special import expit

from grading.grader.analysis.catalogue import BY_NAME, NAMES, T2_AT_MOST
from grading.grader.analysis.model import TIE_MARGIN, LinearModel, policy_floor, rank

CUT_SCALE = 10.0  # the cuts' penalty is this much weaker: they are barely shrunk


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
    samples: Sequence[Sample], features: Sequence[str], pair_share: float, t2: frozenset[str]
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Rows (feature columns, then the two cut columns), outcomes and row weights."""
    x = np.array([[s.values.get(f, 0.0) for f in features] for s in samples], dtype=float)
    x = x.reshape(len(samples), len(features))
    severe = np.array([0.0 if f in t2 else 1.0 for f in features])
    rows, ys, ws = [], [], []
    for i, s in enumerate(samples):
        for tier, _ in s.labels.values():
            for k, mask in ((1, 1.0), (2, severe)):
                cut = np.zeros(2)
                cut[k - 1] = -1.0
                rows.append(np.concatenate([x[i] * mask, cut]))
                ys.append(1.0 if tier > k else 0.0)
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
            pairs += [(a, b) for a in rated for b in rated
                      if samples[a].labels[r] < samples[b].labels[r]]  # fmt: skip
    for a, b in pairs:  # a better than b: P = σ(score_b − score_a)
        rows.append(np.concatenate([x[b] - x[a], np.zeros(2)]))
        ys.append(1.0)
    if pairs:
        share = pair_share / (1 - pair_share) if pair_share < 1 else 1.0
        ws += [share * n_ordinal / len(pairs)] * len(pairs)
    width = len(features) + 2
    return np.array(rows).reshape(-1, width), np.array(ys), np.array(ws)


def fit_model(
    samples: Sequence[Sample],
    *,
    features: Sequence[str] = NAMES,
    c: float = 1.0,
    pair_share: float = 0.5,
    group_scale: float = CUT_SCALE,
    cap_style: bool = True,
) -> LinearModel:
    """Non-negative weights and cuts from the labelled samples (see module docstring).
    `cap_style=False` lets noise and style count towards T3 too (the benchmark's ablation)."""
    if len({t for s in samples for t, _ in s.labels.values()}) < 2:
        raise ValueError("the labels use a single tier: nothing to fit")
    t2 = T2_AT_MOST & frozenset(features) if cap_style else frozenset()
    z, y, w = _design(samples, features, pair_share, t2)
    n = len(features)
    kinds = sorted({BY_NAME[f].group for f in features if f in BY_NAME}) if group_scale > 0 else []
    # Each feature's kind (features outside the catalogue have none: shrunk towards zero).
    kind = np.array([kinds.index(BY_NAME[f].group) if f in BY_NAME and kinds else -1
                     for f in features], dtype=int)  # fmt: skip
    has_kind = kind >= 0
    sign = 2 * y - 1

    def objective(v: np.ndarray) -> tuple[float, np.ndarray]:
        weights, cuts, a = v[:n], v[n : n + 2], v[n + 2 :]
        margin = sign * (z @ v[: n + 2])
        loss = float(w @ np.logaddexp(0.0, -margin))
        g_rows = z.T @ (w * -sign * expit(-margin))
        target = np.where(has_kind, a[np.maximum(kind, 0)] if len(a) else 0.0, 0.0)
        dev = weights - target
        loss += float(dev @ dev) / (2 * c) + float(cuts @ cuts) / (2 * c * CUT_SCALE**2)
        grad = [g_rows[:n] + dev / c, g_rows[n:] + cuts / (c * CUT_SCALE**2)]
        if len(a):
            loss += float(a @ a) / (2 * c * group_scale**2)
            pulled = np.bincount(kind[has_kind], weights=dev[has_kind], minlength=len(a))
            grad.append(-pulled / c + a / (c * group_scale**2))
        return loss, np.concatenate(grad)

    bounds = [(0.0, None)] * n + [(None, None)] * 2 + [(0.0, None)] * len(kinds)
    options = {"maxiter": 10000, "ftol": 1e-15, "gtol": 1e-9}
    start = np.zeros(n + 2 + len(kinds))
    res = minimize(objective, start, jac=True, method="L-BFGS-B", bounds=bounds, options=options)
    # Rounded so the artefact reads the same on every machine (BLAS may differ in the last bits).
    low, high = (round(float(v), 6) for v in res.x[n : n + 2])
    model = LinearModel(
        {f: round(max(float(res.x[j]), 0.0), 6) for j, f in enumerate(features)},
        (low, max(low, high)),
        t2,
    )
    return policy_floor(model)


def predict(
    model: LinearModel, samples: Sequence[Sample], *, margin: float = TIE_MARGIN
) -> dict[str, Prediction]:
    """Tier and rank of one task's candidates (keys must be distinct); `margin` as in `rank`."""
    scores = [model.score(s.values) for s in samples]
    tiers = [model.tier(s.values) for s in samples]
    ranks = rank(scores, tiers, [s.size for s in samples],
                 [s.same if s.same is not None else s.key for s in samples], margin)  # fmt: skip
    return {s.key: Prediction(scores[i], tiers[i], ranks[i]) for i, s in enumerate(samples)}


def leave_one_task_out(
    samples: Sequence[Sample], *, margin: float = TIE_MARGIN, **settings: object
) -> dict[tuple[str, str], Prediction]:
    """Predictions for every task from a model fitted on all the other tasks (`settings` go to
    `fit_model`, `margin` to `rank`)."""
    tasks = sorted({s.task for s in samples})
    out: dict[tuple[str, str], Prediction] = {}
    for held in tasks:
        train = [s for s in samples if s.task != held]
        model = fit_model(train, **settings)  # type: ignore[arg-type]
        test = [s for s in samples if s.task == held]
        for key, p in predict(model, test, margin=margin).items():
            out[(held, key)] = p
    return out


def tasks_of(samples: Iterable[Sample]) -> list[str]:
    return sorted({s.task for s in samples})
