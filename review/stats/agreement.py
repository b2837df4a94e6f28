"""Rater agreement: Cohen's κ (weighted), raw agreement, Krippendorff's alpha (ordinal).

Every function here has a *per-cluster* half and an *aggregate* half so the bootstrap can resample
tasks cheaply: κ needs only the summed confusion matrix and ordinal alpha only the summed
coincidence matrix, so a bootstrap resample is a weighted sum of per-task matrices (see
``bootstrap.py``).

References used by the tests: ``sklearn.metrics.cohen_kappa_score(..., labels=...)`` and
``krippendorff.alpha(..., level_of_measurement="ordinal")``.
"""

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from review.stats._types import FloatArray, IntArray, Weights, as_float

TIERS: tuple[int, ...] = (1, 2, 3)
RUBRIC: tuple[int, ...] = (1, 2, 3, 4, 5)


def _label_index(values: FloatArray, labels: Sequence[int]) -> IntArray:
    """Index of each value in ``labels``; -1 for NaN or values outside ``labels``."""
    lab = np.asarray(labels, dtype=np.float64)
    hit = values[..., None] == lab
    return np.where(hit.any(axis=-1), hit.argmax(axis=-1), -1).astype(np.int64)


def confusion_matrix(a: npt.ArrayLike, b: npt.ArrayLike, labels: Sequence[int] = TIERS) -> IntArray:
    """Counts ``C[i, j]`` of items rated ``labels[i]`` by ``a`` and ``labels[j]`` by ``b``.

    Pairs where either rating is missing (NaN) or outside ``labels`` are dropped, as sklearn does
    for labels outside its ``labels`` argument.
    """
    single: IntArray = cluster_confusions(a, b, np.zeros(np.shape(a), dtype=np.int64), 1, labels)
    return single.reshape(single.shape[1:])


def cluster_confusions(
    a: npt.ArrayLike,
    b: npt.ArrayLike,
    clusters: npt.ArrayLike,
    n_clusters: int,
    labels: Sequence[int] = TIERS,
) -> IntArray:
    """Per-cluster confusion matrices ``(n_clusters, L, L)``; ``clusters`` are 0-based ids."""
    ia = _label_index(as_float(a), labels)
    ib = _label_index(as_float(b), labels)
    cl = np.asarray(clusters, dtype=np.int64)
    keep = (ia >= 0) & (ib >= 0)
    n_lab = len(labels)
    flat = (cl[keep] * n_lab + ia[keep]) * n_lab + ib[keep]
    counts = np.bincount(flat, minlength=n_clusters * n_lab * n_lab)
    return counts.reshape(n_clusters, n_lab, n_lab).astype(np.int64)


def kappa_weights(n_labels: int, weights: Weights = "quadratic") -> FloatArray:
    """Disagreement weights on label *positions*, exactly as sklearn builds them."""
    idx = np.arange(n_labels, dtype=np.float64)
    diff: FloatArray = idx[:, None] - idx[None, :]
    if weights == "quadratic":
        return np.asarray(diff**2, dtype=np.float64)
    if weights == "linear":
        return np.asarray(np.abs(diff), dtype=np.float64)
    if weights is None:
        return np.asarray(diff != 0, dtype=np.float64)
    raise ValueError(f"unknown weights {weights!r}")


def kappa_from_confusions(confusions: npt.ArrayLike, weights: Weights = "quadratic") -> FloatArray:
    """Cohen's κ of each confusion matrix in a stack ``(..., L, L)``.

    κ = 1 - Σ w·O / Σ w·E with E = outer(row sums, column sums) / n. Undefined cases (no items,
    or both raters confined to one shared label) give NaN, matching sklearn's default
    ``replace_undefined_by=np.nan``.
    """
    o = np.asarray(confusions, dtype=np.float64)
    w = kappa_weights(o.shape[-1], weights)
    n = o.sum(axis=(-2, -1))
    rows, cols = o.sum(axis=-1), o.sum(axis=-2)
    with np.errstate(divide="ignore", invalid="ignore"):
        # Σ_ij w_ij r_i c_j / n, without materialising E for every resample.
        expected = np.einsum("...i,ij,...j->...", rows, w, cols) / n
        observed = np.einsum("...ij,ij->...", o, w)
        kappa = 1.0 - observed / expected
    return np.where((n > 0) & (expected > 0), kappa, np.nan)


def weighted_kappa(
    a: npt.ArrayLike,
    b: npt.ArrayLike,
    labels: Sequence[int] = TIERS,
    weights: Weights = "quadratic",
) -> float | None:
    """Cohen's κ between two raters; ``None`` for an empty slice, NaN where sklearn gives NaN."""
    cm = confusion_matrix(a, b, labels)
    if cm.sum() == 0:
        return None
    return float(kappa_from_confusions(cm, weights))


def raw_agreement(a: npt.ArrayLike, b: npt.ArrayLike) -> float | None:
    """Share of items (both rated) on which the two raters give the same label."""
    fa, fb = as_float(a), as_float(b)
    both = ~np.isnan(fa) & ~np.isnan(fb)
    if not both.any():
        return None
    return float(np.mean(fa[both] == fb[both]))


def criterion_kappas(
    a: npt.ArrayLike,
    b: npt.ArrayLike,
    criteria: Sequence[str],
    weights: Weights = "quadratic",
) -> dict[str, float | None]:
    """Weighted κ per rubric criterion; ``a``/``b`` have shape ``(items, criteria)``, scores 1-5."""
    fa, fb = as_float(a), as_float(b)
    return {
        name: weighted_kappa(fa[:, j], fb[:, j], RUBRIC, weights) for j, name in enumerate(criteria)
    }


@dataclass(frozen=True)
class Reliability:
    """Krippendorff's alpha, or ``value=None`` and the reason it is undefined."""

    value: float | None
    reason: str | None = None
    pairable_units: int = 0


def cluster_coincidences(
    reliability_data: npt.ArrayLike,
    clusters: npt.ArrayLike,
    n_clusters: int,
    value_domain: Sequence[int] = TIERS,
) -> FloatArray:
    """Per-cluster coincidence matrices ``(n_clusters, V, V)`` of ``[raters, units]`` data.

    For unit u with value counts n_uv and m_u ≥ 2 ratings:
    o_vv' += n_uv (n_uv' - δ_vv') / (m_u - 1).
    Units with fewer than two ratings are not pairable and contribute nothing.
    """
    data = as_float(reliability_data)
    idx = _label_index(data, value_domain)  # (raters, units)
    n_val = len(value_domain)
    if np.any(~np.isnan(data) & (idx < 0)):
        raise ValueError("reliability data contains values outside value_domain")
    onehot = (idx[..., None] == np.arange(n_val)).astype(np.float64)
    counts = onehot.sum(axis=0)  # (units, V)
    m = counts.sum(axis=1)
    pairable = m >= 2
    counts, m = counts[pairable], m[pairable]
    per_unit = counts[:, :, None] * counts[:, None, :]
    per_unit[:, np.arange(n_val), np.arange(n_val)] -= counts
    per_unit /= (m - 1)[:, None, None]
    out = np.zeros((n_clusters, n_val, n_val))
    np.add.at(out, np.asarray(clusters, dtype=np.int64)[pairable], per_unit)
    return out


def alpha_from_coincidences(coincidences: npt.ArrayLike) -> FloatArray:
    """Ordinal alpha of each coincidence matrix in a stack ``(..., V, V)``; NaN where undefined.

    Ordinal distance (Krippendorff): δ_vv' = (Σ_{g=v..v'} n_g - (n_v + n_v') / 2)², with n_v the
    marginals of the coincidence matrix, so δ is recomputed for every resample.
    """
    o = np.asarray(coincidences, dtype=np.float64)
    n_v = o.sum(axis=-1)
    cum = np.cumsum(n_v, axis=-1)
    grid = np.arange(o.shape[-1])
    lo = np.minimum(grid[:, None], grid[None, :])
    hi = np.maximum(grid[:, None], grid[None, :])
    # Σ_{g=lo..hi} n_g for every pair of values, from the cumulative marginals.
    between = cum[..., hi] - cum[..., lo] + n_v[..., lo]
    delta = (between - (n_v[..., :, None] + n_v[..., None, :]) / 2.0) ** 2
    n = n_v.sum(axis=-1)
    expected = n_v[..., :, None] * n_v[..., None, :] - n_v[..., :, None] * np.eye(o.shape[-1])
    with np.errstate(divide="ignore", invalid="ignore"):
        d_o = (o * delta).sum(axis=(-2, -1))
        d_e = (expected * delta).sum(axis=(-2, -1)) / (n - 1)
        alpha = 1.0 - d_o / d_e
    return np.where(d_e > 0, alpha, np.nan)


def krippendorff_alpha_ordinal(
    reliability_data: npt.ArrayLike, value_domain: Sequence[int] = TIERS
) -> Reliability:
    """Ordinal alpha of ``[raters, units]`` data with NaN for missing ratings.

    Matches ``krippendorff.alpha(..., value_domain=value_domain, level_of_measurement="ordinal")``
    where that is defined; where it raises or returns NaN this returns ``value=None`` and a reason.
    """
    data = as_float(reliability_data)
    if data.ndim != 2 or data.size == 0 or np.isnan(data).all():
        return Reliability(None, "no ratings")
    o = cluster_coincidences(data, np.zeros(data.shape[1], dtype=np.int64), 1, value_domain)[0]
    pairable = int(((~np.isnan(data)).sum(axis=0) >= 2).sum())
    if pairable == 0:
        return Reliability(None, "no unit has ratings from two raters", 0)
    value = float(alpha_from_coincidences(o))
    if np.isnan(value):
        return Reliability(None, "all pairable ratings use one value (no variation)", pairable)
    return Reliability(value, None, pairable)


def rating_pairs(
    unit: npt.ArrayLike, rater: npt.ArrayLike, value: npt.ArrayLike
) -> tuple[FloatArray, FloatArray, IntArray]:
    """Every pair of ratings two raters gave one unit, as ``(a, b, unit)`` arrays.

    Input is one rating per row (``unit``, ``rater``, ``value``; NaN values are dropped). Each
    pair is oriented by rater index (``a`` from the lower), so with exactly two raters ``a`` and
    ``b`` are their ratings of the units both rated: Cohen's κ on them is the two raters' κ.
    With more raters, κ on the pooled pairs is the pairwise-pooled κ.
    """
    u = np.asarray(unit, dtype=np.int64)
    r = np.asarray(rater, dtype=np.int64)
    v = as_float(value)
    keep = ~np.isnan(v)
    u, r, v = u[keep], r[keep], v[keep]
    order = np.lexsort((r, u))
    u, r, v = u[order], r[order], v[order]
    a: list[FloatArray] = []
    b: list[FloatArray] = []
    units: list[IntArray] = []
    # Rows of one unit are adjacent: pair each row with the rows 1, 2, … after it in its unit.
    for offset in range(1, u.size):
        same = u[offset:] == u[:-offset]
        if not same.any():
            break
        distinct = same & (r[offset:] != r[:-offset])
        a.append(v[:-offset][distinct])
        b.append(v[offset:][distinct])
        units.append(u[:-offset][distinct])
    if not a:
        return np.zeros(0), np.zeros(0), np.zeros(0, dtype=np.int64)
    return np.concatenate(a), np.concatenate(b), np.concatenate(units)
