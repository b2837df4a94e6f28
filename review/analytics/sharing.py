"""Judgements of a patch, fanned out to every attempt that submitted it.

Reviewers label one candidate per distinct patch of a group (its first attempt); exports are per
attempt, so each attempt with that patch gets the same labels. An assignment holds at most one
label per patch; one made before identical patches were one candidate may hold one per attempt,
and then each attempt keeps its own.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable

from grading.selectors.rollouts import patch_siblings


def fan_out[Row](
    *,
    attempt_ids: Collection[int],
    fetch: Callable[[set[int]], Iterable[tuple[int, int, Row]]],
) -> dict[int, list[Row]]:
    """Per attempt, the rows `fetch` returns for it or for an attempt with the same patch.

    `fetch(ids)` yields `(attempt_id, assignment_id, row)` for the judgements on those attempts,
    in the order they should be listed.
    """
    siblings = patch_siblings(attempt_ids=attempt_ids)
    wanted = {s for sibs in siblings.values() for s in sibs}
    found: dict[int, list[tuple[int, Row]]] = {}
    order: dict[int, int] = {}  # row identity -> position, to keep `fetch`'s order
    for n, (attempt_id, assignment_id, row) in enumerate(fetch(wanted)):
        found.setdefault(attempt_id, []).append((assignment_id, row))
        order[id(row)] = n
    out: dict[int, list[Row]] = {}
    for aid in attempt_ids:
        chosen: dict[int, Row] = {}
        for sib in siblings.get(aid, [aid]):  # the attempt itself first
            for assignment_id, row in found.get(sib, []):
                chosen.setdefault(assignment_id, row)
        if chosen:
            out[aid] = sorted(chosen.values(), key=lambda r: order[id(r)])
    return out
