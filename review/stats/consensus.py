"""Human consensus tier per candidate: median tier, or one-coin Dawid-Skene with 3+ reviewers.

Inputs are human ratings only, shape ``[candidates, reviewers]`` with NaN where a reviewer did not
rate the candidate. The grader must never be passed in here: the consensus is what the grader is
judged against (method §7).
"""

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from review.stats._types import FloatArray, as_float


def median_tier(ratings: npt.ArrayLike) -> FloatArray:
    """Median tier per candidate; NaN where nobody rated it.

    An even number of ratings can put the median between two tiers (T1, T2 → 1.5). We then take
    the **worse** tier (the larger number): a candidate is called T1 only if more than half of
    its reviewers said T1, so a split vote never promotes it.
    """
    r = as_float(ratings)
    if r.ndim == 1:
        r = r[:, None]
    out = np.full(r.shape[0], np.nan)
    rated = ~np.isnan(r).all(axis=1)
    if rated.any():
        # nanmedian of integer tiers is either a tier or a half-way point; ceil takes the worse.
        out[rated] = np.ceil(np.nanmedian(r[rated], axis=1))
    return out


@dataclass(frozen=True)
class DawidSkene:
    """One-coin Dawid-Skene fit: posteriors, consensus tier and per-reviewer accuracy."""

    posterior: FloatArray  # (candidates, n_tiers); NaN rows for unrated candidates
    tier: FloatArray  # argmax tier (1-based); ties → worse tier; NaN if unrated
    accuracy: FloatArray  # (reviewers,) P(reviewer gives the true tier); NaN if never rated
    prior: FloatArray  # (n_tiers,) class prior
    iterations: int
    converged: bool


def dawid_skene_one_coin(
    ratings: npt.ArrayLike,
    n_tiers: int = 3,
    *,
    max_iter: int = 200,
    tol: float = 1e-8,
    min_reviewers: int = 3,
) -> DawidSkene | None:
    """EM for the one-coin model: reviewer j is right with probability p_j, else uniform.

    P(y_ij = l | true k) = p_j if l = k else (1 - p_j)/(K - 1). Initialised from vote shares
    (soft majority vote). Returns ``None`` when fewer than ``min_reviewers`` reviewers rated
    anything — with two reviewers the accuracies are not identifiable, use the median.
    """
    r = as_float(ratings)
    if r.ndim != 2 or r.size == 0:
        return None
    observed = ~np.isnan(r)
    if int(observed.any(axis=0).sum()) < min_reviewers:
        return None
    labels = np.arange(1, n_tiers + 1, dtype=np.float64)
    onehot = (r[..., None] == labels).astype(np.float64)  # (items, reviewers, K)
    rated = observed.any(axis=1)
    votes = onehot.sum(axis=1)
    post = np.divide(
        votes, votes.sum(axis=1, keepdims=True), out=np.zeros_like(votes), where=rated[:, None]
    )
    n_rated = observed.sum(axis=0)
    eps = 1e-6
    converged, it = False, 0
    prior = np.full(n_tiers, 1.0 / n_tiers)
    acc = np.full(r.shape[1], 0.7)
    for it in range(1, max_iter + 1):  # noqa: B007 - `it` is reported after the loop
        # M-step: prior from posteriors; p_j = expected share of j's ratings that are correct.
        prior = np.clip(post[rated].mean(axis=0), eps, None)
        prior /= prior.sum()
        correct = np.einsum("ijk,ik->j", onehot, post)
        acc = np.clip(
            np.divide(correct, n_rated, out=np.full(r.shape[1], 0.5), where=n_rated > 0),
            eps,
            1 - eps,
        )
        # E-step in log space: Σ_j [y_ij = k] log p_j + [y_ij ≠ k] log((1 - p_j)/(K - 1)).
        log_right, log_wrong = np.log(acc), np.log((1 - acc) / (n_tiers - 1))
        right = np.einsum("ijk,j->ik", onehot, log_right)
        wrong = (observed.astype(np.float64) @ log_wrong)[:, None] - np.einsum(
            "ijk,j->ik", onehot, log_wrong
        )
        logp = np.log(prior) + right + wrong
        logp -= logp.max(axis=1, keepdims=True)
        new = np.exp(logp)
        new /= new.sum(axis=1, keepdims=True)
        new[~rated] = 0.0
        delta = float(np.abs(new - post).max())
        post = new
        if delta < tol:
            converged = True
            break
    posterior = np.where(rated[:, None], post, np.nan)
    # Reverse so argmax breaks exact ties towards the worse (higher) tier, like median_tier.
    worst_first = n_tiers - 1 - np.argmax(post[:, ::-1], axis=1)
    tier = np.where(rated, worst_first + 1.0, np.nan)
    accuracy = np.where(n_rated > 0, acc, np.nan)
    return DawidSkene(posterior, tier, accuracy, prior, it, converged)
