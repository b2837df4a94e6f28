"""RL impact (grading.domain.rl_impact), pure: which one-tier moves change who gains or loses
advantage or who gets the most, computed by the advantage math itself."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from grading.advantages import AttemptInput, redistribute
from grading.domain.rl_impact import rl_impact


def _passer(tier: int, rank: int | None = 1) -> AttemptInput:
    return AttemptInput(status="valid", reward=1.0, tier=tier, rank=rank)


FAIL = AttemptInput(status="valid", reward=0.0)


def test_a_lone_passer_moves_nothing_and_only_the_verdicts_doubt_counts():
    group = [_passer(1), FAIL, FAIL, FAIL]
    impact = rl_impact(group)
    assert impact is not None
    assert [(m.from_tier, m.to_tier) for m in impact.moves] == [(1, 2)]
    assert impact.fragility == 0 and impact.score == 0
    assert impact.largest_shift == pytest.approx(0)
    assert rl_impact(group, confidence=0.3).score == pytest.approx(0.7)


def test_two_tied_best_passers_hang_on_every_move():
    impact = rl_impact([_passer(1), _passer(1), FAIL, FAIL])
    assert impact is not None and len(impact.moves) == 2
    # Either one moved to T2 stops gaining as much as the other: a new largest share.
    assert all(m.top_changes for m in impact.moves)
    assert impact.fragility == 1 and impact.score == 1


def test_it_finds_the_moves_that_turn_a_gain_into_a_loss():
    # r = [1, 1, 1, 0]: A = 0.25 for each passer; tiers T1, T2, T3.
    group = [_passer(1), _passer(2), _passer(3, None), FAIL]
    impact = rl_impact(group)
    assert impact is not None
    decisive = {(m.attempt, m.to_tier): m.decisive for m in impact.moves}
    # Down a tier the top or the T2 candidate makes the cap bind, and the T2 candidate's
    # gain over plain GRPO becomes a loss; up a tier nobody changes side.
    assert decisive == {(0, 2): True, (1, 1): False, (1, 3): True, (2, 2): False}
    assert impact.fragility == pytest.approx(0.5)
    # The same verdict on the T2 → T3 move, from the advantage math directly.
    grpo = redistribute(group).attempts[1].adv_grpo
    before = redistribute(group).attempts[1].adv_gagar
    after = redistribute([_passer(1), _passer(3, 1), _passer(3, None), FAIL]).attempts[1]
    assert before > grpo and after.adv_gagar < grpo


def test_a_group_without_a_verdict_has_no_impact():
    fallback = [AttemptInput(status="valid", reward=1.0), FAIL]
    assert rl_impact(fallback) is None
    assert rl_impact([FAIL, FAIL]) is None


# A shared 2-core machine generates slowly; the property is cheap to check.
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(
        st.tuples(st.integers(1, 3), st.integers(1, 4), st.sampled_from([0.0, 1.0, 0.5])),
        min_size=1,
        max_size=8,
    ),
    st.one_of(st.none(), st.floats(0, 1)),
)
def test_scores_stay_in_range_and_every_passer_gets_its_moves(rows, confidence):
    group = [
        AttemptInput(status="valid", reward=r, tier=t if r > 0 else None, rank=k if r > 0 else None)
        for t, k, r in rows
    ]
    impact = rl_impact(group, confidence=confidence)
    passers = [a for a in group if a.passing]
    if not passers:
        assert impact is None
        return
    assert impact is not None
    assert 0 <= impact.fragility <= 1 and 0 <= impact.score <= 1
    assert impact.score >= (impact.uncertainty or 0)
    assert len(impact.moves) == sum(1 if a.tier in (1, 3) else 2 for a in passers)
    assert all(m.shift >= 0 and abs(m.to_tier - m.from_tier) == 1 for m in impact.moves)
