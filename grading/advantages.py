r"""Tier coefficients and advantage redistribution (method §4), as pure functions.

This module imports no Django, Celery or ORM: services, exports and the benchmark call it, and
it is tested without a database.

Inputs per group
----------------
Attempts with a status, a test reward and, for valid passing attempts, a tier (1..3) and a rank
within the tier from the grader's verdict (1 = best; equal ranks are a tie).

- ``infra_failed`` attempts are left out of every statistic and get advantage 0.
- ``exploit_confirmed`` attempts are kept, with reward 0 (``reward_used``).
- An attempt *passes* when it is ``valid`` and its reward is > 0 (the spec's rewards are binary).
  Only passing attempts are tiered; a tier or rank on any other attempt is ignored, because failed
  attempts are shown to the grader as context only.

Coefficients (defaults; all configurable through :class:`CoefficientConfig`)
-----------------------------------------------------------------------------
- T1: the best-ranked T1 attempt(s) (minimum rank, ties included) → 1.0; other T1 → 0.9.
- T2: the T2 passers are sorted by rank and numbered 0..m-1 (*positions*); an attempt's position is
  the first position of its tie, i.e. the number of T2 passers with a strictly smaller rank, and

      c = t2_first − (t2_first − t2_last) · position / (m − 1)        (m > 1)
      c = t2_first                                                    (m = 1)

  so ranks [1, 2, 3] give [0.85, 0.625, 0.4] and ranks [1, 1, 2] give [0.85, 0.85, 0.4].
- T3: 0.2.
- Non-passing attempts: 1 (never used by the formula below).
- No verdict (``fallback=True``): every coefficient is 1, which is exactly plain GRPO; the group is
  flagged ``fallback``.

Computation (method §4, exactly)
------------------------------
Over the valid attempts V (everything but ``infra_failed``), with r_i the reward used::

    R̄ = mean(r_i over V);  A_i = r_i − R̄                       # adv_grpo
    P = {i ∈ V : A_i > 0}                # if P is empty: A' = A (nothing to redistribute)
    λ = Σ_P A_i / Σ_P c_i·A_i            # lambda_raw
    λ' = min(λ, λ_max)                   # lambda_applied; λ_max default 1.5, None = uncapped
    A'_i = λ'·c_i·A_i for i ∈ P;  A'_i = A_i otherwise
    if λ' < λ:  A' = A' − mean(A' over V)       # re-centre only when the cap binds (capped)

A group with one valid attempt has A = 0 everywhere, so P is empty and A' = 0.

Reported per group: ``mean_reward`` (R̄), ``lambda_raw`` and ``lambda_applied`` (both None when P
is empty), ``capped`` (λ' < λ), ``mean_shift`` (the mean of A' over V *before* re-centring, i.e. the
value that was subtracted from every valid advantage: 0 when the cap does not bind, negative when
it binds), ``positive_total_before`` (Σ_P A_i) and ``positive_total_after`` (Σ_P A'_i after
re-centring; equal to the before-total when the cap does not bind, e.g. 1.0 → 0.95 in the spec's
capped test vector), ``n_valid`` and ``fallback``. The pre-recentre advantages are
``adv_gagar + mean_shift`` for every valid attempt.

Per attempt: ``reward_used`` (None for infra), ``coefficient``, ``adv_grpo`` (A), ``adv_gagar``
(A'), ``reward_equivalent`` r'_i = R̄ + A'_i (None for infra) — a trainer that only subtracts the
group mean from r' gets back A' — and ``included`` (False for infra).

Optional std normalization (``normalize_std=True``)
---------------------------------------------------
σ = sqrt(Σ_V (r_i − R̄)² / (n − ddof)) with ``std_ddof`` ∈ {0, 1} (0 = population std, NumPy's
default; 1 = sample std, PyTorch's default); σ := 0 when n − ddof ≤ 0 (then every advantage is
already 0). Both ``adv_grpo`` and ``adv_gagar`` are divided by (σ + ``std_eps``), after the
redistribution, so λ and ``capped`` do not depend on it. ``mean_shift`` and the positive totals are
reported in the same (normalized) units as the exported advantages, and ``reward_equivalent`` is
R̄ + the normalized A', so a mean-subtracting trainer still reproduces the exported advantage;
do not ask for normalization here if the trainer divides by the std itself.

Properties (tested with hypothesis)
-----------------------------------
Σ_V A' = 0; sign(A'_i) = sign(A_i) for binary rewards; among passers A' is non-decreasing in c;
when the cap does not bind, Σ_P A' = Σ_P A and the other attempts keep A. The sign property needs
λ' > 0 and c > 0, which the validation below guarantees: re-centring only happens when
λ'·Σ_P c_i·A_i < Σ_P A_i, so the subtracted mean is negative (passers move up) and smaller in size
than a failure's |A_i| (failures stay negative).

Training scale
--------------
:func:`coefficients_batch` and :func:`redistribute_batch` do the same on ``(n_groups, G)`` arrays,
fully vectorized (ties included); groups of different sizes are padded with ``valid_mask=False``.
:func:`redistribute` is the readable reference and the batch version is tested against it.
"""

from __future__ import annotations

import functools
import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, get_args

import numpy as np
import numpy.typing as npt

__all__ = [
    "DEFAULT_COEFFICIENTS",
    "DEFAULT_LAMBDA_MAX",
    "AttemptAdvantage",
    "AttemptInput",
    "AttemptStatus",
    "BatchAdvantages",
    "CoefficientConfig",
    "GroupAdvantages",
    "coefficients",
    "coefficients_batch",
    "redistribute",
    "redistribute_batch",
]

AttemptStatus = Literal["valid", "infra_failed", "exploit_confirmed"]
_STATUSES: frozenset[str] = frozenset(get_args(AttemptStatus))

DEFAULT_LAMBDA_MAX = 1.5

FloatArray = npt.NDArray[np.float64]
BoolArray = npt.NDArray[np.bool_]
IntArray = npt.NDArray[np.int64]


@dataclass(frozen=True, slots=True)
class CoefficientConfig:
    """Quality coefficients per tier.

    Validated as ``0 < t3 ≤ t2_last ≤ t2_first ≤ t1_other ≤ t1_best ≤ 1``:
    - c > 0 keeps every passer's advantage positive (sign(A') = sign(A));
    - the order means a better tier or rank never gets a smaller coefficient;
    - c ≤ 1 makes λ_raw ≥ 1, so redistribution only moves advantage from worse to better passers
      and λ_max (≥ 1) caps an amplification, never a shrink of plain GRPO.
    """

    t1_best: float = 1.0
    t1_other: float = 0.9
    t2_first: float = 0.85
    t2_last: float = 0.4
    t3: float = 0.2

    def __post_init__(self) -> None:
        chain = (self.t3, self.t2_last, self.t2_first, self.t1_other, self.t1_best)
        if not all(math.isfinite(c) for c in chain):
            raise ValueError(f"coefficients must be finite numbers: {self}")
        if not chain[0] > 0:
            raise ValueError(f"t3 must be > 0 (got {self.t3})")
        if chain[-1] > 1:
            raise ValueError(f"t1_best must be ≤ 1 (got {self.t1_best})")
        if any(lo > hi for lo, hi in itertools.pairwise(chain)):
            raise ValueError(
                "coefficients must satisfy 0 < t3 ≤ t2_last ≤ t2_first ≤ t1_other ≤ t1_best ≤ 1"
                f" (got {self})"
            )

    def t2(self, position: int, size: int) -> float:
        """Coefficient of the T2 attempt at 0-based ``position`` among ``size`` T2 attempts."""
        if size <= 1:
            return self.t2_first
        # Same expression as the batch path so both round identically.
        return self.t2_first - (self.t2_first - self.t2_last) * (position / (size - 1))


DEFAULT_COEFFICIENTS = CoefficientConfig()


@dataclass(frozen=True, slots=True)
class AttemptInput:
    """One attempt of a group: status, test reward and (for passers) tier and rank in tier."""

    status: AttemptStatus
    reward: float
    tier: int | None = None
    rank: int | None = None

    def __post_init__(self) -> None:
        if self.status not in _STATUSES:
            raise ValueError(f"unknown status {self.status!r}")
        if not math.isfinite(self.reward):
            raise ValueError(f"reward must be finite (got {self.reward})")
        if self.tier is not None and self.tier not in (1, 2, 3):
            raise ValueError(f"tier must be 1, 2 or 3 (got {self.tier})")
        if self.rank is not None and self.rank < 1:
            raise ValueError(f"rank must be ≥ 1 (got {self.rank})")

    @property
    def included(self) -> bool:
        return self.status != "infra_failed"

    @property
    def reward_used(self) -> float | None:
        if self.status == "infra_failed":
            return None
        if self.status == "exploit_confirmed":
            return 0.0
        return float(self.reward)

    @property
    def passing(self) -> bool:
        return self.status == "valid" and self.reward > 0


@dataclass(frozen=True, slots=True)
class AttemptAdvantage:
    status: AttemptStatus
    included: bool
    reward_used: float | None
    coefficient: float
    adv_grpo: float
    adv_gagar: float
    reward_equivalent: float | None


@dataclass(frozen=True, slots=True)
class GroupAdvantages:
    attempts: tuple[AttemptAdvantage, ...]
    n_valid: int
    mean_reward: float | None
    lambda_raw: float | None
    lambda_applied: float | None
    capped: bool
    mean_shift: float
    positive_total_before: float
    positive_total_after: float
    fallback: bool
    # σ(r over valid) used for normalization; None when normalization was not asked for.
    reward_std: float | None


def _check_lambda_max(lambda_max: float | None) -> None:
    # Below 1 the cap would bind on an all-T1-best group (λ_raw = 1) and change plain GRPO.
    if lambda_max is not None and not (math.isfinite(lambda_max) and lambda_max >= 1):
        raise ValueError(f"lambda_max must be None or a finite number ≥ 1 (got {lambda_max})")


def _check_std(std_ddof: int, std_eps: float) -> None:
    if std_ddof not in (0, 1):
        raise ValueError(f"std_ddof must be 0 or 1 (got {std_ddof})")
    if not (math.isfinite(std_eps) and std_eps > 0):
        raise ValueError(f"std_eps must be a finite number > 0 (got {std_eps})")


def coefficients(
    attempts: Sequence[AttemptInput],
    config: CoefficientConfig = DEFAULT_COEFFICIENTS,
    *,
    fallback: bool = False,
) -> list[float]:
    """Coefficient per attempt (see the module docstring for the rules).

    Every passing attempt needs a tier, and T1/T2 passers a rank; a group without a verdict must
    say so with ``fallback=True`` (all 1) rather than silently getting GRPO.
    """
    result = [1.0] * len(attempts)
    if fallback:
        return result
    t1: list[tuple[int, int]] = []
    t2: list[tuple[int, int]] = []
    for i, attempt in enumerate(attempts):
        if not attempt.passing:
            continue
        if attempt.tier is None:
            raise ValueError(
                f"passing attempt {i} has no tier; use fallback=True for a group with no verdict"
            )
        if attempt.tier == 3:
            result[i] = config.t3
            continue
        if attempt.rank is None:
            raise ValueError(f"passing attempt {i} in T{attempt.tier} has no rank")
        (t1 if attempt.tier == 1 else t2).append((i, attempt.rank))
    if t1:
        best = min(rank for _, rank in t1)
        for i, rank in t1:
            result[i] = config.t1_best if rank == best else config.t1_other
    for i, rank in t2:
        # First position of the tie = how many T2 members rank strictly better.
        position = sum(1 for _, other in t2 if other < rank)
        result[i] = config.t2(position, len(t2))
    return result


def redistribute(
    attempts: Sequence[AttemptInput],
    *,
    lambda_max: float | None = DEFAULT_LAMBDA_MAX,
    coefficient_config: CoefficientConfig = DEFAULT_COEFFICIENTS,
    normalize_std: bool = False,
    std_ddof: int = 0,
    std_eps: float = 1e-6,
    fallback: bool = False,
) -> GroupAdvantages:
    """GRPO and GAGAR advantages of one group, with the λ audit (method §4; module docstring)."""
    _check_lambda_max(lambda_max)
    _check_std(std_ddof, std_eps)
    coefs = coefficients(attempts, coefficient_config, fallback=fallback)
    valid = [i for i, a in enumerate(attempts) if a.included]
    rewards = {i: float(attempts[i].reward_used or 0.0) for i in valid}
    n = len(valid)

    mean_reward: float | None = None
    adv = [0.0] * len(attempts)
    if n:
        mean_reward = sum(rewards[i] for i in valid) / n
        for i in valid:
            adv[i] = rewards[i] - mean_reward
    positive = [i for i in valid if adv[i] > 0]

    new = list(adv)
    lambda_raw: float | None = None
    lambda_applied: float | None = None
    capped = False
    mean_shift = 0.0
    if positive:
        lambda_raw = sum(adv[i] for i in positive) / sum(coefs[i] * adv[i] for i in positive)
        lambda_applied = lambda_raw if lambda_max is None else min(lambda_raw, lambda_max)
        for i in positive:
            new[i] = lambda_applied * coefs[i] * adv[i]
        capped = lambda_applied < lambda_raw
        if capped:
            mean_shift = sum(new[i] for i in valid) / n
            for i in valid:
                new[i] -= mean_shift

    reward_std: float | None = None
    if normalize_std:
        dof = n - std_ddof
        reward_std = math.sqrt(sum(adv[i] ** 2 for i in valid) / dof) if dof > 0 else 0.0
        scale = reward_std + std_eps
        adv = [a / scale for a in adv]
        new = [a / scale for a in new]
        mean_shift /= scale

    out = tuple(
        AttemptAdvantage(
            status=a.status,
            included=a.included,
            reward_used=a.reward_used,
            coefficient=coefs[i],
            adv_grpo=adv[i],
            adv_gagar=new[i],
            reward_equivalent=(
                None if mean_reward is None or not a.included else mean_reward + new[i]
            ),
        )
        for i, a in enumerate(attempts)
    )
    return GroupAdvantages(
        attempts=out,
        n_valid=n,
        mean_reward=mean_reward,
        lambda_raw=lambda_raw,
        lambda_applied=lambda_applied,
        capped=capped,
        mean_shift=mean_shift,
        positive_total_before=sum(adv[i] for i in positive),
        positive_total_after=sum(new[i] for i in positive),
        fallback=fallback,
        reward_std=reward_std,
    )


# --- vectorized ------------------------------------------------------------------------------
#
# The batch functions are written for throughput (see bench/bench_advantages.py). What costs at
# this size is memory, not arithmetic: every fresh (n_groups, G) float array is a few hundred
# kilobytes of newly mapped pages, so temporaries are few and reused in place. Row sums are
# matrix-vector products (BLAS, several times faster than .sum(axis=1) on 16-wide rows), and the
# T1/T2 coefficients come from one histogram over (group, tier, rank) cells of the ranked slots.


@dataclass(frozen=True, slots=True)
class BatchAdvantages:
    """:func:`redistribute` over ``(n_groups, G)`` arrays.

    Per attempt ``(n_groups, G)``: ``adv`` (A'), ``adv_grpo`` (A), ``valid`` (the mask used), and
    ``reward_equivalent`` (NaN on invalid slots). Per group ``(n_groups,)``: the same audit as
    :class:`GroupAdvantages`, with NaN where the scalar version has None.
    """

    adv: FloatArray
    adv_grpo: FloatArray
    valid: BoolArray
    n_valid: IntArray
    mean_reward: FloatArray
    lambda_raw: FloatArray
    lambda_applied: FloatArray
    capped: BoolArray
    mean_shift: FloatArray
    positive_total_before: FloatArray
    positive_total_after: FloatArray
    reward_std: FloatArray | None

    @property
    def reward_equivalent(self) -> FloatArray:
        # Computed on demand: a trainer that consumes `adv` directly never pays for it.
        return np.where(self.valid, self.mean_reward[:, None] + self.adv, np.nan)


def _ranks_within_segments(segment: IntArray, rank: IntArray) -> IntArray:
    """Replace ranks by 1 + the number of same-segment items with a strictly smaller rank.

    Order and ties within each segment are kept, so the T1/T2 coefficients do not change, and the
    new ranks are at most the segment size: the histogram stays small for any rank values.
    """
    order = np.lexsort((rank, segment))
    sorted_segment = segment[order]
    sorted_rank = rank[order]
    position = np.arange(len(order))
    new_segment = np.ones(len(order), dtype=bool)
    new_segment[1:] = sorted_segment[1:] != sorted_segment[:-1]
    new_value = new_segment.copy()
    new_value[1:] |= sorted_rank[1:] != sorted_rank[:-1]
    # Index of the first item of each segment, and of the first item of each tie, carried forward.
    segment_start = np.maximum.accumulate(np.where(new_segment, position, 0))
    tie_start = np.maximum.accumulate(np.where(new_value, position, 0))
    compact = np.empty(len(order), dtype=np.intp)
    compact[order] = tie_start - segment_start + 1
    return compact


@functools.lru_cache(maxsize=64)
def _coefficient_table(config: CoefficientConfig, width: int) -> FloatArray:
    """Coefficients by ``row·width + position`` (position = members of the tier ranked better).

    Row 0 is T1 (``[t1_best, t1_other, t1_other, …]``) and row m (1 ≤ m ≤ width) is T2 with m
    members.
    """
    size = np.arange(1, width + 1, dtype=np.int64)[:, None]
    position = np.arange(width, dtype=np.int64)[None, :]
    # Same expression as CoefficientConfig.t2, so both round identically.
    t2 = config.t2_first - (config.t2_first - config.t2_last) * (position / np.maximum(size - 1, 1))
    t2 = np.where(size > 1, t2, config.t2_first)
    t1 = np.full((1, width), config.t1_other)
    t1[0, 0] = config.t1_best
    table = np.concatenate((t1, t2)).ravel()
    # Cached per (config, width) and shared between calls: a trainer calling once per step
    # would otherwise rebuild it every time. Read-only so no caller can change a cached copy.
    table.flags.writeable = False
    return table


def coefficients_batch(
    tiers: npt.ArrayLike,
    ranks: npt.ArrayLike,
    passing_mask: npt.ArrayLike,
    config: CoefficientConfig = DEFAULT_COEFFICIENTS,
    *,
    fallback_mask: npt.ArrayLike | None = None,
) -> FloatArray:
    """:func:`coefficients` over ``(n_groups, G)`` integer arrays, ties included.

    ``tiers`` holds 1..3 on passing slots and ``ranks`` ranks ≥ 1 on T1/T2 passing slots; values
    on other slots are ignored. ``passing_mask`` marks valid attempts with reward > 0. Rows where
    ``fallback_mask`` is True (no verdict) get all ones. A passing slot with a tier outside 1..3 is
    an error; unlike the scalar version a missing tier cannot be detected (arrays have no None).
    """
    tier = np.asarray(tiers)
    rank = np.asarray(ranks)
    passing = np.asarray(passing_mask, dtype=bool)
    if tier.ndim != 2 or tier.shape != rank.shape or tier.shape != passing.shape:
        raise ValueError("tiers, ranks and passing_mask must be 2-D arrays of one shape")
    # dtype.kind rather than np.issubdtype, which costs microseconds per call at step size.
    if tier.dtype.kind not in "iu" or rank.dtype.kind not in "iu":
        raise ValueError("tiers and ranks must be integer arrays")
    if fallback_mask is not None:
        # A copy with the no-verdict rows cleared (cheaper than a broadcast `&` over every slot).
        passing = passing.copy()
        passing[np.asarray(fallback_mask, dtype=bool)] = False
    n_groups, width = tier.shape

    is_t3 = passing & (tier == 3)
    # A lookup rather than np.where: the mask is random, and where's branches mispredict.
    out: FloatArray = np.array([1.0, config.t3]).take(is_t3.ravel().view(np.uint8))
    # Only T1/T2 passers need positions: work on their flat indices, a fraction of all slots.
    ranked = np.flatnonzero(passing ^ is_t3)  # passing and not T3
    if not len(ranked):
        return out.reshape(tier.shape)
    tier_r = np.asarray(tier.ravel()[ranked], dtype=np.intp)
    if int(tier_r.min()) < 1 or int(tier_r.max()) > 2:
        raise ValueError("every passing attempt needs a tier of 1, 2 or 3")
    rank_r = np.asarray(rank.ravel()[ranked], dtype=np.intp)
    if int(rank_r.min()) < 1:
        raise ValueError("T1 and T2 passing attempts need a rank ≥ 1")
    # One segment per (group, tier): segment = 2·group + (tier − 1).
    segment = ranked // width
    segment *= 2
    segment += tier_r
    segment -= 1
    del tier_r
    # One histogram cell per (segment, rank value): cheap while ranks stay near G, as verdict
    # ranks do; arbitrary rank values are first renumbered within their segment. Cell 0 of each
    # segment stays empty (ranks are ≥ 1), so `running` at it counts the items of earlier segments.
    if int(rank_r.max()) > width:
        rank_r = _ranks_within_segments(segment, rank_r)
    block = int(rank_r.max()) + 1
    cell = segment * block
    cell += rank_r
    del rank_r
    running = np.bincount(cell, minlength=2 * n_groups * block)
    np.cumsum(running, out=running)
    before_segment = running[::block]
    # A T2 segment's size selects its table row (see _coefficient_table); T1 uses row 0.
    row = running[block - 1 :: block] - before_segment
    row.reshape(n_groups, 2)[:, 0] = 0
    # Table index = row·width + position, and position = running[cell − 1] − before_segment:
    # how many members of the item's (group, tier) rank strictly better.
    offset = row
    offset *= width
    offset -= before_segment
    cell -= 1
    index = np.take(running, cell, out=cell, mode="clip")
    index += np.take(offset, segment, out=segment, mode="clip")
    out[ranked] = _coefficient_table(config, width)[index]
    return out.reshape(tier.shape)


def redistribute_batch(
    rewards: npt.ArrayLike,
    valid_mask: npt.ArrayLike,
    coefficients: npt.ArrayLike,
    lambda_max: float | None = DEFAULT_LAMBDA_MAX,
    *,
    normalize_std: bool = False,
    std_ddof: int = 0,
    std_eps: float = 1e-6,
) -> BatchAdvantages:
    """:func:`redistribute` over ``(n_groups, G)`` arrays.

    ``rewards`` must already be the rewards *used* (exploits set to 0); ``valid_mask`` is False on
    infra failures and padding, whose rewards are ignored (NaN is fine). Agrees with
    :func:`redistribute` to ~1e-15 (tested at 1e-12); ``capped`` can differ only when λ_raw equals
    λ_max up to rounding, where both results agree anyway.
    """
    _check_lambda_max(lambda_max)
    _check_std(std_ddof, std_eps)
    r = np.asarray(rewards, dtype=np.float64)
    v = np.asarray(valid_mask, dtype=bool)
    c = np.asarray(coefficients, dtype=np.float64)
    if r.ndim != 2 or r.shape != v.shape or r.shape != c.shape:
        raise ValueError("rewards, valid_mask and coefficients must be 2-D arrays of one shape")
    ones = np.ones(r.shape[1])
    valid_f = v.astype(np.float64)

    n_valid = valid_f @ ones
    n = np.maximum(n_valid, 1.0)
    # Invalid slots are zeroed first so a NaN/garbage reward there cannot leak into any sum.
    adv = np.where(v, r, 0.0)
    mean = (adv @ ones) / n
    adv -= mean[:, None]
    adv *= valid_f
    adv += 0.0  # -0.0 (from −mean·0 on invalid slots) becomes 0.0, as in the scalar version

    # P = {A > 0}; every other slot has A ≤ 0, so max(A, 0) is A restricted to P.
    adv_p = np.maximum(adv, 0.0)
    total_before = adv_p @ ones
    new = c * adv_p
    weighted = new @ ones  # Σ_P c·A
    has_pos = total_before > 0
    lam_raw = np.full(r.shape[0], np.nan)
    np.divide(total_before, weighted, out=lam_raw, where=has_pos)
    lam = lam_raw if lambda_max is None else np.minimum(lam_raw, lambda_max)
    # NaN < NaN is False, so groups without passers above the mean are never capped.
    capped = lam < lam_raw
    lam_applied = np.where(has_pos, lam, 0.0)

    # A' = λ'·c·A on P and A off P, where A − max(A, 0) is A off P and exactly 0 on P.
    new *= lam_applied[:, None]
    new += adv
    new -= adv_p
    total_after = lam_applied * weighted  # Σ_P A' before re-centring
    shift = np.zeros(r.shape[0])
    if capped.any():
        # mean(A' over V) = (λ'·Σ_P c·A + Σ_V A − Σ_P A) / n, and Σ_V A = 0: no pass over A'.
        np.divide(total_after - total_before, n, out=shift, where=capped)
        valid_f *= shift[:, None]
        new -= valid_f
        # |P| per group, reusing valid_f's memory (a fresh array costs more than the pass).
        np.greater(adv_p, 0.0, out=valid_f)
        total_after -= (valid_f @ ones) * shift

    reward_std: FloatArray | None = None
    if normalize_std:
        dof = n_valid - std_ddof
        var = np.zeros(r.shape[0])
        np.divide((adv * adv) @ ones, dof, out=var, where=dof > 0)
        reward_std = np.sqrt(var)
        scale = reward_std + std_eps
        adv /= scale[:, None]
        new /= scale[:, None]
        shift = shift / scale
        total_before = total_before / scale
        total_after = total_after / scale

    return BatchAdvantages(
        adv=new,
        adv_grpo=adv,
        valid=v,
        n_valid=n_valid.astype(np.int64),
        mean_reward=np.where(n_valid > 0, mean, np.nan),
        lambda_raw=lam_raw,
        lambda_applied=np.where(has_pos, lam, np.nan),
        capped=capped,
        mean_shift=shift,
        positive_total_before=total_before,
        positive_total_after=total_after,
        reward_std=reward_std,
    )
