"""Counts as people read them: `1 problem`, `2 problems` (pure; every message uses this one)."""

from __future__ import annotations


def plural(n: int, word: str, many: str | None = None) -> str:
    """`n` and the noun, singular for exactly one; `many` for irregular plurals."""
    return f"{n} {word}" if n == 1 else f"{n} {many or word + 's'}"
