"""Blinding, pure: per-reviewer aliases and display order.

No Django here (an import contract keeps it so). What is redacted from the text a reviewer is
shown is the one shared redactor's business (grading.domain.redaction), which the grader uses
for trajectories too.
"""

from __future__ import annotations

import random
import string
from collections.abc import Mapping, Sequence


def alias_for(index: int) -> str:
    """A, B, …, Z, AA, AB, … (spreadsheet columns), 0-based."""
    letters = string.ascii_uppercase
    out = ""
    n = index + 1
    while n:
        n, rem = divmod(n - 1, 26)
        out = letters[rem] + out
    return out


def draw_order[T](items: Sequence[T], rng: random.Random) -> list[tuple[str, T]]:
    """A fresh shuffle of `items`, aliased in display order: the first shown is A.

    Both the order and which item gets which alias are private to one assignment, so two
    reviewers comparing notes ("B was best") cannot tell whether they mean the same candidate.
    """
    shuffled = list(items)
    rng.shuffle(shuffled)
    return [(alias_for(i), item) for i, item in enumerate(shuffled)]


def draw_order_unlike[T](
    items: Sequence[T], previous: Mapping[T, str], rng: random.Random, *, tries: int = 64
) -> list[tuple[str, T]]:
    """A fresh draw in which no item keeps the alias `previous` gave it (a derangement).

    For a sentinel (the same group served again to the same reviewer): "B was best last time"
    must not carry over, so every candidate gets a new letter. Rejection sampling keeps the
    draw uniform over such orders (about 37% of shuffles qualify); should every try fail, a
    rotation of the last shuffle by 1…n−1 places, which moves every item, is used instead.
    A single candidate can only be A.
    """
    drawn = draw_order(items, rng)
    if len(drawn) < 2:
        return drawn
    for _ in range(tries):
        if all(previous.get(item) != alias for alias, item in drawn):
            return drawn
        drawn = draw_order(items, rng)
    # Practically unreachable (0.63**64): rotate the previous order by 1…n−1 places, which
    # moves every item whose old alias was one of A…(n-th letter).
    before = sorted(items, key=lambda item: _alias_key(previous.get(item)))
    shift = rng.randrange(1, len(before))
    rotated = before[shift:] + before[:shift]
    return [(alias_for(i), item) for i, item in enumerate(rotated)]


def _alias_key(alias: str | None) -> tuple[int, str]:
    # Aliases in display order (A…Z, AA…); items that had none go last.
    return (len(alias), alias) if alias else (1_000, "")
