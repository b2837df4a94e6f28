"""How much a human review of a group can change training: its *RL impact*, pure.

Training uses the grader's tiers through method §4 (`grading.advantages`). A review matters most
where those tiers are least certain, or where the advantages hang on them: where moving one
candidate by one tier would change who gains and who loses advantage, or who gets the most.
This module asks exactly that question of the advantage math itself — it calls
:func:`grading.advantages.redistribute` on the stored tiers and on every one-tier move, and
never re-implements any of it.

For a group with passers P and the grader's tiers, each passer i may move one tier up or down
(T1↔T2↔T3; no move out of the range). A move up puts i last in the tier above, a move down first
in the tier below, the nearest places across the boundary. A move is *decisive* when, against
the stored tiers' advantages A' (and plain GRPO's A):

* the sign of some attempt's A' changes (it cannot under binary rewards, §4's sign property, but
  rewards are not always binary), or
* the sign of some passer's redistributed share A'ᵢ − Aᵢ changes (gaining vs losing against
  plain GRPO: whether training pushes it up or down relative to the tests alone), or
* the set of passers with the largest A' (the largest share of the positive advantage) changes.

Scores, each in [0, 1]:

    fragility   = decisive moves / moves                  (0 when there is no move)
    uncertainty = 1 − the verdict's stated confidence     (None when it states none)
    score       = max(fragility, uncertainty or 0)

so a group comes first when either reason holds. ``largest_shift`` — the most advantage one
move displaces, Σ|ΔA'| over the valid attempts as a share of the positive total — is reported
beside them. A group without a verdict (fallback: every coefficient 1) has no grader tiers to
check: its impact is None.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace

from grading.advantages import (
    DEFAULT_COEFFICIENTS,
    DEFAULT_LAMBDA_MAX,
    AttemptInput,
    CoefficientConfig,
    redistribute,
)

# Advantages closer to zero than this have no sign; a largest share within it of the top ties.
TOLERANCE = 1e-12


@dataclass(frozen=True, slots=True)
class TierMove:
    attempt: int  # index into the group's attempts
    from_tier: int
    to_tier: int
    sign_flips: int  # attempts whose A' or redistributed share changes sign
    top_changes: bool  # the passers with the largest A' change
    shift: float  # Σ|ΔA'| over valid attempts, as a share of the positive total

    @property
    def decisive(self) -> bool:
        return self.sign_flips > 0 or self.top_changes


@dataclass(frozen=True, slots=True)
class RLImpact:
    score: float
    fragility: float
    uncertainty: float | None
    largest_shift: float
    moves: tuple[TierMove, ...]

    @property
    def decisive_moves(self) -> int:
        return sum(m.decisive for m in self.moves)


def _sign(x: float) -> int:
    return 0 if abs(x) <= TOLERANCE else (1 if x > 0 else -1)


def _moved(attempts: Sequence[AttemptInput], i: int, to_tier: int) -> list[AttemptInput]:
    """`attempts` with passer i moved to `to_tier`, at the place nearest its old tier."""
    out = list(attempts)
    ranks = [
        a.rank or 1 for j, a in enumerate(attempts) if j != i and a.passing and a.tier == to_tier
    ]
    current = attempts[i].tier or 0
    if to_tier < current:  # up: last in the better tier
        out[i] = replace(attempts[i], tier=to_tier, rank=max(ranks, default=0) + 1)
        return out
    # Down: first in the worse tier, everyone there one place further.
    for j, a in enumerate(attempts):
        if j != i and a.passing and a.tier == to_tier:
            out[j] = replace(a, rank=(a.rank or 1) + 1)
    out[i] = replace(attempts[i], tier=to_tier, rank=1)
    return out


def rl_impact(
    attempts: Sequence[AttemptInput],
    *,
    confidence: float | None = None,
    lambda_max: float | None = DEFAULT_LAMBDA_MAX,
    coefficient_config: CoefficientConfig = DEFAULT_COEFFICIENTS,
    normalize_std: bool = False,
    std_ddof: int = 0,
    std_eps: float = 1e-6,
) -> RLImpact | None:
    """The group's RL impact under these advantage parameters (module docstring); None when
    no passer carries a grader tier (a fallback group)."""
    passers = [i for i, a in enumerate(attempts) if a.passing]
    if not passers or any(attempts[i].tier is None for i in passers):
        return None

    def advantages(inputs: Sequence[AttemptInput]) -> list[float]:
        result = redistribute(
            inputs,
            lambda_max=lambda_max,
            coefficient_config=coefficient_config,
            normalize_std=normalize_std,
            std_ddof=std_ddof,
            std_eps=std_eps,
        )
        return [a.adv_gagar for a in result.attempts]

    base = redistribute(
        attempts,
        lambda_max=lambda_max,
        coefficient_config=coefficient_config,
        normalize_std=normalize_std,
        std_ddof=std_ddof,
        std_eps=std_eps,
    )
    grpo = [a.adv_grpo for a in base.attempts]
    before = [a.adv_gagar for a in base.attempts]
    valid = [i for i, a in enumerate(attempts) if a.included]
    total = abs(base.positive_total_before) or 1.0

    def top(adv: Sequence[float]) -> frozenset[int]:
        best = max(adv[i] for i in passers)
        return frozenset(i for i in passers if adv[i] >= best - TOLERANCE)

    base_top = top(before)
    moves: list[TierMove] = []
    for i in passers:
        tier = attempts[i].tier or 0
        for to_tier in (tier - 1, tier + 1):
            if not 1 <= to_tier <= 3:
                continue
            after = advantages(_moved(attempts, i, to_tier))
            flips = sum(
                _sign(after[j]) != _sign(before[j])
                or (j in passers and _sign(after[j] - grpo[j]) != _sign(before[j] - grpo[j]))
                for j in valid
            )
            moves.append(
                TierMove(
                    attempt=i,
                    from_tier=tier,
                    to_tier=to_tier,
                    sign_flips=flips,
                    top_changes=top(after) != base_top,
                    shift=sum(abs(after[j] - before[j]) for j in valid) / total,
                )
            )
    fragility = sum(m.decisive for m in moves) / len(moves) if moves else 0.0
    uncertainty = None
    if confidence is not None and math.isfinite(confidence):
        uncertainty = min(max(1.0 - confidence, 0.0), 1.0)
    return RLImpact(
        score=max(fragility, uncertainty or 0.0),
        fragility=fragility,
        uncertainty=uncertainty,
        largest_shift=max((m.shift for m in moves), default=0.0),
        moves=tuple(moves),
    )
