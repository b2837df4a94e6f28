"""Within-group ranking agreement between a reference (humans) and another ranker (the grader).

Groups are rows of a padded matrix: ``keys[g, i]`` is candidate i's ordering key in group g, where
**lower is better** (e.g. tier·100 + rank-in-tier, or a consensus position) and NaN means "not a
ranked candidate" (not passing, not reviewed, or padding). A candidate counts only if both rankers
give it a key. Ragged per-group lists can be padded with :func:`pad_groups`.

Definitions (all pooled or averaged over groups, and all bootstrappable by group):

* **Pairwise concordance** (headline) — over candidate pairs the reference does *not* tie, the
  share the other ranker orders the same way. A pair the other ranker ties earns 0.5: a tie is
  neither agreement nor reversal, and 0.5 keeps a ranker that ties everything at chance level.
* **Kendall τ-b** per group, as ``scipy.stats.kendalltau`` (variant b); groups with fewer than 2
  candidates, or where either ranker ties every candidate (τ-b undefined), are skipped.
* **Top-1 agreement** — share of groups (≥ 2 candidates) whose other-ranker best is a reference
  best. With ties at the top it is |H∩G|/|G| (a random pick among the other ranker's tied best),
  and the chance level is |H|/k, which is 1/k without ties.
"""

from collections.abc import Sequence
from dataclasses import dataclass
from typing import cast

import numpy as np
import numpy.typing as npt

from review.stats._types import FloatArray, as_float

# Columns of the per-group sufficient statistics returned by ``ranking_cluster_stats``.
CONC, PAIRS, TAU, TAU_N, TOP1, TOP1_N, CHANCE = range(7)


def pad_groups(groups: Sequence[npt.ArrayLike]) -> FloatArray:
    """Stack ragged per-group key lists into a NaN-padded ``(n_groups, k_max)`` matrix."""
    rows = [np.atleast_1d(as_float(g)) for g in groups]
    width = max((len(r) for r in rows), default=0)
    out = np.full((len(rows), width), np.nan)
    for i, r in enumerate(rows):
        out[i, : len(r)] = r
    return out


def _as_matrix(keys: npt.ArrayLike) -> FloatArray:
    try:
        arr = as_float(keys)
    except ValueError:  # ragged input
        return pad_groups(cast("Sequence[npt.ArrayLike]", keys))
    # A flat vector is one group; anything else must already be (groups, candidates).
    return arr.reshape(1, -1) if arr.ndim == 1 else arr


def ranking_cluster_stats(
    reference: npt.ArrayLike,
    other: npt.ArrayLike,
) -> FloatArray:
    """Per-group additive statistics, shape ``(n_groups, 7)`` (columns CONC … CHANCE).

    Sums over groups of these columns give every ranking statistic as a ratio, which is what makes
    the task bootstrap a matrix product.
    """
    ref, oth = _as_matrix(reference), _as_matrix(other)
    if ref.shape != oth.shape:
        raise ValueError(f"shape mismatch {ref.shape} vs {oth.shape}")
    present = ~np.isnan(ref) & ~np.isnan(oth)
    ref, oth = np.where(present, ref, 0.0), np.where(present, oth, 0.0)
    k = present.sum(axis=1)
    width = ref.shape[1]
    # Each unordered pair once (i < j), and only pairs of present candidates.
    upper = np.triu(np.ones((width, width), dtype=bool), 1)
    valid = present[:, :, None] & present[:, None, :] & upper
    sr = np.sign(ref[:, :, None] - ref[:, None, :]) * valid
    so = np.sign(oth[:, :, None] - oth[:, None, :]) * valid
    prod = sr * so

    out = np.zeros((ref.shape[0], 7))
    untied = sr != 0
    out[:, CONC] = ((prod > 0) + 0.5 * (untied & (so == 0))).sum(axis=(1, 2))
    out[:, PAIRS] = untied.sum(axis=(1, 2))

    n0 = valid.sum(axis=(1, 2))
    n1 = (valid & (sr == 0)).sum(axis=(1, 2))
    n2 = (valid & (so == 0)).sum(axis=(1, 2))
    denom = np.sqrt((n0 - n1).astype(np.float64) * (n0 - n2))
    has_tau = (k >= 2) & (denom > 0)
    out[:, TAU] = np.divide(prod.sum(axis=(1, 2)), denom, out=np.zeros_like(denom), where=has_tau)
    out[:, TAU_N] = has_tau

    ref_best = present & (ref == _best(ref, present))
    oth_best = present & (oth == _best(oth, present))
    ranked = k >= 2
    n_oth_best = np.maximum(oth_best.sum(axis=1), 1)
    out[:, TOP1] = np.where(ranked, (ref_best & oth_best).sum(axis=1) / n_oth_best, 0.0)
    out[:, TOP1_N] = ranked
    out[:, CHANCE] = np.where(ranked, ref_best.sum(axis=1) / np.maximum(k, 1), 0.0)
    return out


def _best(keys: FloatArray, present: npt.NDArray[np.bool_]) -> FloatArray:
    # ``initial`` keeps zero-width (no candidate) matrices from raising.
    return np.where(present, keys, np.inf).min(axis=1, keepdims=True, initial=np.inf)


def _ratio(num: FloatArray, den: FloatArray) -> FloatArray:
    out: FloatArray = np.divide(num, den, out=np.full(np.shape(num), np.nan), where=den > 0)
    return out


def concordance_from_sums(sums: FloatArray) -> FloatArray:
    """Pooled pairwise concordance from summed per-group statistics ``(..., 7)``."""
    return _ratio(sums[..., CONC], sums[..., PAIRS])


def tau_from_sums(sums: FloatArray) -> FloatArray:
    """Mean per-group Kendall τ-b from summed per-group statistics ``(..., 7)``."""
    return _ratio(sums[..., TAU], sums[..., TAU_N])


def top1_from_sums(sums: FloatArray) -> FloatArray:
    """Top-1 agreement rate from summed per-group statistics ``(..., 7)``."""
    return _ratio(sums[..., TOP1], sums[..., TOP1_N])


def top1_chance_from_sums(sums: FloatArray) -> FloatArray:
    """Chance level of top-1 agreement (mean |H|/k) from summed statistics ``(..., 7)``."""
    return _ratio(sums[..., CHANCE], sums[..., TOP1_N])


def _scalar(value: FloatArray) -> float | None:
    return None if np.isnan(value) else float(value)


def kendall_tau_b_per_group(
    reference: npt.ArrayLike,
    other: npt.ArrayLike,
) -> FloatArray:
    """τ-b of each group (NaN where skipped: < 2 candidates or one ranker ties them all)."""
    stats = ranking_cluster_stats(reference, other)
    return np.where(stats[:, TAU_N] > 0, stats[:, TAU], np.nan)


@dataclass(frozen=True)
class RankingAgreement:
    """Headline ranking statistics; ``None`` where no group qualifies."""

    concordance: float | None
    pairs: int
    mean_tau_b: float | None
    tau_groups: int
    top1: float | None
    top1_chance: float | None
    top1_groups: int


def ranking_agreement(
    reference: npt.ArrayLike,
    other: npt.ArrayLike,
) -> RankingAgreement:
    """All ranking statistics of the module docstring, pooled over groups."""
    ref = _as_matrix(reference)
    sums = ranking_cluster_stats(ref, other).sum(axis=0) if ref.shape[0] else np.zeros(7)
    return RankingAgreement(
        concordance=_scalar(concordance_from_sums(sums)),
        pairs=int(sums[PAIRS]),
        mean_tau_b=_scalar(tau_from_sums(sums)),
        tau_groups=int(sums[TAU_N]),
        top1=_scalar(top1_from_sums(sums)),
        top1_chance=_scalar(top1_chance_from_sums(sums)),
        top1_groups=int(sums[TOP1_N]),
    )


def pairwise_concordance(
    reference: npt.ArrayLike,
    other: npt.ArrayLike,
) -> float | None:
    """Pooled pairwise concordance over reference-untied pairs (grader ties count 0.5)."""
    return ranking_agreement(reference, other).concordance
