"""Reviewer self-consistency sentinels, pure: which submitted group comes back, and when.

A campaign's sentinel rate r is the share of each reviewer's submitted groups that come back to
them once as a sentinel. After n first reviews a reviewer is owed ``floor(r·n)`` sentinels in
all; one is served when it is owed and some submitted group qualifies: it has no sentinel yet
and at least ``min_gap`` of the reviewer's other groups were submitted after it (so it comes
back "later", not straight after its own submission). Which qualifying group comes back is a
uniform random choice, so the timing and the choice follow nothing the reviewer can see.

No Django here (an import contract keeps it so): the queue service reads the rows and calls
:func:`sentinel_pick`.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from dataclasses import dataclass

# Other groups submitted between a group and its sentinel while regular work is left; once
# the reviewer has nothing else to take, one is enough.
MIN_GAP = 2
MIN_GAP_WHEN_IDLE = 1


@dataclass(frozen=True, slots=True)
class SubmittedGroup:
    """One of the reviewer's first reviews in a campaign, in submission order."""

    group: int
    has_sentinel: bool


def sentinels_owed(*, rate: float, first_reviews: int, sentinels: int) -> int:
    """How many more sentinels the reviewer is owed (never negative)."""
    if not 0 <= rate <= 1:
        raise ValueError(f"sentinel rate must be within [0, 1] (got {rate})")
    # The epsilon keeps 0.3 × 10 from flooring to 2 through binary rounding.
    return max(math.floor(rate * first_reviews + 1e-9) - sentinels, 0)


def sentinel_pick(
    submitted: Sequence[SubmittedGroup],
    *,
    rate: float,
    sentinels: int,
    min_gap: int,
    rng: random.Random,
) -> int | None:
    """The group to serve again now, or None (nothing owed, or nothing far enough back).

    `submitted` are the reviewer's first reviews in submission order; `sentinels` counts the
    sentinels already made for them (in any state).
    """
    if not sentinels_owed(rate=rate, first_reviews=len(submitted), sentinels=sentinels):
        return None
    last = len(submitted) - 1
    eligible = [
        s.group for i, s in enumerate(submitted) if not s.has_sentinel and last - i >= min_gap
    ]
    return rng.choice(eligible) if eligible else None
