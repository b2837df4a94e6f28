"""Blinding, pure: per-reviewer aliases and display order.

No Django here (an import contract keeps it so). What is redacted from the text a reviewer is
shown is the one shared redactor's business (grading.domain.redaction), which the grader uses
for trajectories too.
"""

from __future__ import annotations

import random
import string
from collections.abc import Sequence


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
