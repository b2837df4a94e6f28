"""Pure sentinel rules (no database): when a submitted group comes back, the new aliases, and
the self-consistency statistics."""

from __future__ import annotations

import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from review.blinding import alias_for, draw_order_unlike
from review.sentinels import SubmittedGroup, sentinel_pick, sentinels_owed
from review.stats.consistency import SentinelPair, consistency, consistency_by_reviewer
from review.stats.ranking import pairwise_concordance


def _history(n: int, repeated: frozenset[int] = frozenset()) -> list[SubmittedGroup]:
    return [SubmittedGroup(g, g in repeated) for g in range(n)]


def test_it_owes_the_floor_of_the_rate_times_first_reviews():
    assert sentinels_owed(rate=0.3, first_reviews=10, sentinels=0) == 3
    assert sentinels_owed(rate=0.3, first_reviews=10, sentinels=3) == 0
    assert sentinels_owed(rate=0.25, first_reviews=3, sentinels=0) == 0
    assert sentinels_owed(rate=0.0, first_reviews=100, sentinels=0) == 0
    with pytest.raises(ValueError, match="within"):
        sentinels_owed(rate=1.5, first_reviews=1, sentinels=0)


def test_it_brings_back_only_groups_submitted_at_least_the_gap_ago():
    rng = random.Random(1)
    # 4 submitted, rate 0.5 → 2 owed; with a gap of 2 only groups 0 and 1 qualify.
    picks = {
        sentinel_pick(_history(4), rate=0.5, sentinels=0, min_gap=2, rng=rng) for _ in range(50)
    }
    assert picks == {0, 1}
    # Nothing owed: nothing comes back, however far back the groups are.
    assert sentinel_pick(_history(4), rate=0.5, sentinels=2, min_gap=0, rng=rng) is None
    # The last submitted group never comes back straight after itself.
    assert sentinel_pick(_history(1), rate=1.0, sentinels=0, min_gap=1, rng=rng) is None


def test_it_never_repeats_a_group_twice():
    rng = random.Random(2)
    history = _history(3, repeated=frozenset({0}))
    picks = {sentinel_pick(history, rate=1.0, sentinels=1, min_gap=1, rng=rng) for _ in range(30)}
    assert picks == {1}


@given(st.integers(min_value=2, max_value=30), st.integers())
def test_a_sentinel_gives_every_candidate_a_new_alias(n, seed):
    rng = random.Random(seed)
    items = list(range(100, 100 + n))
    before = {item: alias_for(i) for i, item in enumerate(rng.sample(items, n))}
    drawn = draw_order_unlike(items, before, rng)
    assert [a for a, _ in drawn] == [alias_for(i) for i in range(n)]
    assert sorted(i for _, i in drawn) == items
    assert all(before[item] != alias for alias, item in drawn)


def test_the_fallback_rotation_also_moves_every_candidate():
    items = list(range(6))
    before = {item: alias_for(item) for item in items}
    drawn = draw_order_unlike(items, before, random.Random(3), tries=0)
    assert all(before[item] != alias for alias, item in drawn)


def test_a_single_candidate_can_only_be_a():
    assert draw_order_unlike([7], {7: "A"}, random.Random(0)) == [("A", 7)]


def test_flip_rate_and_rank_consistency_with_their_counts():
    same = SentinelPair(
        reviewer=1,
        first={10: ("t1", 1), 11: ("t2", 1), 12: ("t3", 1)},
        again={10: ("t1", 1), 11: ("t2", 1), 12: ("t3", 1)},
    )
    # One flip (T2 → exploit), and the order of 20/21 reversed.
    moved = SentinelPair(
        reviewer=1,
        first={20: ("t1", 1), 21: ("t1", 2), 22: ("t2", 1)},
        again={20: ("t1", 2), 21: ("t1", 1), 22: ("exploit", None)},
    )
    c = consistency([same, moved])
    assert (c.n_sentinels, c.n_candidates, c.n_flips) == (2, 6, 1)
    assert c.flip_rate == pytest.approx(1 / 6)
    # 3 + 3 ordered pairs; the reversed one is the only discordant pair.
    assert c.n_pairs == 6
    assert c.rank_concordance == pytest.approx(5 / 6)
    # The same figure as the ranking module's pooled concordance on the same keys.
    keys_first = [[1001, 2001, 3001], [1001, 1002, 2001]]
    keys_again = [[1001, 2001, 3001], [1002, 1001, 4000]]
    assert c.rank_concordance == pytest.approx(pairwise_concordance(keys_first, keys_again))


def test_nothing_to_compare_is_none_not_zero():
    empty = consistency([SentinelPair(reviewer=1, first={1: ("t1", 1)}, again={})])
    assert (empty.n_sentinels, empty.n_candidates) == (1, 0)
    assert empty.flip_rate is None and empty.rank_concordance is None
    assert consistency([]).flip_rate is None


def test_it_keeps_reviewers_apart():
    a = SentinelPair(reviewer=1, first={1: ("t1", 1)}, again={1: ("t1", 1)})
    b = SentinelPair(reviewer=2, first={1: ("t1", 1)}, again={1: ("t3", 1)})
    by = consistency_by_reviewer([a, b])
    assert by[1].flip_rate == 0 and by[2].flip_rate == 1
