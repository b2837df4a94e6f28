"""Identical patches are one candidate: attempts of a group whose patches are byte-identical are
judged once (by reviewers, by the grader, by imported reviews) and the judgement applies to each
of them; every attempt keeps its own advantage.

Patches are stored once per SHA-256 of their bytes, so "byte-identical" is "the same patch row".
An attempt without a patch shares nothing: it stands alone.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable


def distinct_patches[T](items: Iterable[T], key: Callable[[T], Hashable | None]) -> list[list[T]]:
    """`items` grouped by `key` (the patch; None = no patch, never grouped), in first-seen
    order: the first item of each group is the one shown, the rest share its judgement."""
    groups: list[list[T]] = []
    where: dict[Hashable, list[T]] = {}
    for item in items:
        k = key(item)
        if k is None:
            groups.append([item])
        elif k in where:
            where[k].append(item)
        else:
            where[k] = [item]
            groups.append(where[k])
    return groups
