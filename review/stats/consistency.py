"""Reviewer self-consistency on sentinels: the same reviewer, the same group, twice, blind.

A sentinel pair is a reviewer's first review of a group and their later sentinel review of it
(fresh aliases and order, nothing marking it as a repeat). Per reviewer, over candidates both
reviews labelled:

* **tier flip rate** — the share of candidates whose label differs between the two reviews,
  with "exploit / test tampering" a label of its own (T2 → exploit is a flip);
* **rank consistency** — pooled pairwise concordance of the two within-group orderings, over
  candidate pairs the first review does not tie (a pair the second review ties earns 0.5), as
  :func:`review.stats.ranking.ranking_cluster_stats` defines it for grader vs humans. The
  ordering key is tier·1000 + rank in tier, with exploit below T3, as for human keys elsewhere.

Counts come with every rate (sentinel groups, candidates compared, pairs compared), and a rate
with nothing to compare is None, never 0.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from review.stats.ranking import CONC, PAIRS, pad_groups, ranking_cluster_stats

_TIER_KEY = {"t1": 1, "t2": 2, "t3": 3, "exploit": 4}
# A label as compared: its tier ("t1".."t3" or "exploit") and rank within the tier.
Judgement = tuple[str, int | None]


@dataclass(frozen=True, slots=True)
class SentinelPair:
    """One reviewer's two reviews of one group: judgements keyed by candidate (attempt) id."""

    reviewer: int
    first: Mapping[int, Judgement]
    again: Mapping[int, Judgement]


@dataclass(frozen=True, slots=True)
class Consistency:
    n_sentinels: int  # sentinel groups with both reviews submitted
    n_candidates: int  # candidates labelled in both reviews
    n_flips: int
    flip_rate: float | None
    n_pairs: int  # candidate pairs the first review orders (untied)
    rank_concordance: float | None


def _key(judgement: Judgement) -> float:
    tier, rank = judgement
    return _TIER_KEY[tier] * 1000.0 + (rank or 0)


def consistency(pairs: Sequence[SentinelPair]) -> Consistency:
    """Flip rate and rank consistency pooled over `pairs` (see the module docstring)."""
    n_candidates = n_flips = 0
    first_keys: list[list[float]] = []
    again_keys: list[list[float]] = []
    for pair in pairs:
        both = sorted(
            c
            for c in pair.first.keys() & pair.again.keys()
            if pair.first[c][0] in _TIER_KEY and pair.again[c][0] in _TIER_KEY
        )
        n_candidates += len(both)
        n_flips += sum(pair.first[c][0] != pair.again[c][0] for c in both)
        first_keys.append([_key(pair.first[c]) for c in both])
        again_keys.append([_key(pair.again[c]) for c in both])
    sums = (
        ranking_cluster_stats(pad_groups(first_keys), pad_groups(again_keys)).sum(axis=0)
        if first_keys
        else np.zeros(7)
    )
    n_pairs = int(sums[PAIRS])
    return Consistency(
        n_sentinels=len(pairs),
        n_candidates=n_candidates,
        n_flips=n_flips,
        flip_rate=n_flips / n_candidates if n_candidates else None,
        n_pairs=n_pairs,
        rank_concordance=float(sums[CONC] / n_pairs) if n_pairs else None,
    )


def consistency_by_reviewer(pairs: Sequence[SentinelPair]) -> dict[int, Consistency]:
    """:func:`consistency` per reviewer, in order of first appearance."""
    by: dict[int, list[SentinelPair]] = {}
    for pair in pairs:
        by.setdefault(pair.reviewer, []).append(pair)
    return {reviewer: consistency(own) for reviewer, own in by.items()}
