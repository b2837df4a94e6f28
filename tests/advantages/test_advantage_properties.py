"""method §4 invariants of grading.advantages as hypothesis properties, and batch == scalar."""

from dataclasses import replace

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from grading.advantages import (
    AttemptInput,
    CoefficientConfig,
    coefficients_batch,
    redistribute,
    redistribute_batch,
)

EPS = 1e-12

lambda_maxes = st.one_of(st.none(), st.sampled_from([1.0, 1.2, 1.5, 2.0, 5.0]))


@st.composite
def configs(draw):
    # Draw the chain 0 < t3 ≤ t2_last ≤ t2_first ≤ t1_other ≤ t1_best ≤ 1 as sorted values.
    values = sorted(draw(st.lists(st.floats(0.01, 1.0), min_size=5, max_size=5)))
    return CoefficientConfig(
        t3=values[0], t2_last=values[1], t2_first=values[2], t1_other=values[3], t1_best=values[4]
    )


@st.composite
def attempts(draw):
    status = draw(
        st.sampled_from(["valid"] * 6 + ["infra_failed", "exploit_confirmed"]),
    )
    reward = float(draw(st.integers(0, 1)))
    # Small rank ranges make ties common.
    return AttemptInput(status, reward, tier=draw(st.integers(1, 3)), rank=draw(st.integers(1, 4)))


groups = st.lists(attempts(), min_size=1, max_size=64)


def valid_advantages(result):
    return [(a.adv_grpo, a.adv_gagar) for a in result.attempts if a.included]


@settings(max_examples=300, deadline=None)
@given(groups, lambda_maxes, configs())
def test_the_redistributed_advantages_sum_to_zero_over_valid_attempts(group, lambda_max, config):
    result = redistribute(group, lambda_max=lambda_max, coefficient_config=config)
    assert abs(sum(new for _, new in valid_advantages(result))) < EPS


@settings(max_examples=300, deadline=None)
@given(groups, lambda_maxes, configs())
def test_redistribution_keeps_the_sign_of_every_advantage(group, lambda_max, config):
    result = redistribute(group, lambda_max=lambda_max, coefficient_config=config)
    for old, new in valid_advantages(result):
        assert np.sign(old) == np.sign(new), (old, new)


@settings(max_examples=300, deadline=None)
@given(groups, lambda_maxes, configs())
def test_among_passers_a_higher_coefficient_never_gets_less(group, lambda_max, config):
    result = redistribute(group, lambda_max=lambda_max, coefficient_config=config)
    passers = [a for a in result.attempts if a.adv_grpo > 0]
    for a in passers:
        for b in passers:
            if a.coefficient > b.coefficient:
                assert a.adv_gagar >= b.adv_gagar - EPS


@settings(max_examples=300, deadline=None)
@given(groups, lambda_maxes)
def test_an_unbound_cap_restores_the_positive_total_and_leaves_failures_alone(group, lambda_max):
    result = redistribute(group, lambda_max=lambda_max)
    if result.capped:
        return
    assert result.mean_shift == 0.0
    positive = [a for a in result.attempts if a.adv_grpo > 0]
    assert abs(sum(a.adv_gagar for a in positive) - sum(a.adv_grpo for a in positive)) < EPS
    assert abs(result.positive_total_after - result.positive_total_before) < EPS
    for a in result.attempts:
        if a.adv_grpo <= 0:
            assert a.adv_gagar == a.adv_grpo


@settings(max_examples=200, deadline=None)
@given(groups, lambda_maxes)
def test_a_bound_cap_shrinks_the_positive_total_and_shifts_down(group, lambda_max):
    result = redistribute(group, lambda_max=lambda_max)
    if not result.capped:
        return
    assert result.lambda_applied == lambda_max
    assert result.mean_shift < 0
    assert result.positive_total_after < result.positive_total_before + EPS


@settings(max_examples=200, deadline=None)
@given(groups, lambda_maxes)
def test_infra_failures_get_zero_and_change_nothing(group, lambda_max):
    result = redistribute(group, lambda_max=lambda_max)
    kept = [a for a in group if a.status != "infra_failed"]
    without = redistribute(kept, lambda_max=lambda_max)
    for a in result.attempts:
        if not a.included:
            assert (a.adv_grpo, a.adv_gagar, a.reward_equivalent) == (0.0, 0.0, None)
    assert [a.adv_gagar for a in result.attempts if a.included] == [
        a.adv_gagar for a in without.attempts
    ]


@settings(max_examples=200, deadline=None)
@given(groups, lambda_maxes)
def test_fallback_equals_grpo(group, lambda_max):
    result = redistribute(group, lambda_max=lambda_max, fallback=True)
    assert result.fallback
    assert not result.capped
    for a in result.attempts:
        assert a.coefficient == 1.0
        assert a.adv_gagar == a.adv_grpo


@settings(max_examples=100, deadline=None)
@given(attempts(), st.lists(st.just(AttemptInput("infra_failed", 1.0)), max_size=5))
def test_a_single_valid_attempt_gets_zero(only, infra):
    if only.status == "infra_failed":
        return
    result = redistribute([only, *infra])
    assert [a.adv_gagar for a in result.attempts] == [0.0] * (1 + len(infra))


# --- batch == scalar --------------------------------------------------------------------------


def as_arrays(batch, width, config, fallbacks):
    shape = (len(batch), width)
    rewards = np.zeros(shape)
    valid = np.zeros(shape, bool)
    tiers = np.zeros(shape, np.int64)
    ranks = np.zeros(shape, np.int64)
    passing = np.zeros(shape, bool)
    for g, group in enumerate(batch):
        for i, a in enumerate(group):
            valid[g, i] = a.included
            rewards[g, i] = a.reward_used if a.included else np.nan
            tiers[g, i] = a.tier or 0
            ranks[g, i] = a.rank or 0
            passing[g, i] = a.passing
    coefs = coefficients_batch(tiers, ranks, passing, config, fallback_mask=fallbacks)
    return rewards, valid, coefs


def close(scalar, array):
    if scalar is None:
        return bool(np.isnan(array))
    return abs(scalar - array) <= EPS


@settings(max_examples=200, deadline=None)
@given(
    st.lists(groups, min_size=1, max_size=8),
    lambda_maxes,
    configs(),
    st.data(),
    st.booleans(),
    st.sampled_from([0, 1]),
    st.sampled_from([1, 1000]),
)
def test_the_batch_version_agrees_with_the_scalar_one(
    batch, lambda_max, config, data, normalize, ddof, rank_scale
):
    # Scaling ranks keeps order and ties; large ranks take the pairwise path of coefficients_batch.
    batch = [
        [replace(a, rank=a.rank * rank_scale if a.rank else a.rank) for a in group]
        for group in batch
    ]
    fallbacks = data.draw(st.lists(st.booleans(), min_size=len(batch), max_size=len(batch)))
    # Padding beyond a group's size is masked out, as a trainer would pad ragged groups.
    width = max(len(g) for g in batch) + data.draw(st.integers(0, 3))
    rewards, valid, coefs = as_arrays(batch, width, config, fallbacks)
    got = redistribute_batch(
        rewards, valid, coefs, lambda_max, normalize_std=normalize, std_ddof=ddof
    )

    for g, group in enumerate(batch):
        want = redistribute(
            group,
            lambda_max=lambda_max,
            coefficient_config=config,
            fallback=fallbacks[g],
            normalize_std=normalize,
            std_ddof=ddof,
        )
        assert [a.coefficient for a in want.attempts] == list(coefs[g, : len(group)])
        assert (coefs[g, len(group) :] == 1.0).all()
        for i, a in enumerate(want.attempts):
            assert abs(a.adv_gagar - got.adv[g, i]) <= EPS
            assert abs(a.adv_grpo - got.adv_grpo[g, i]) <= EPS
            assert close(a.reward_equivalent, got.reward_equivalent[g, i])
        assert (got.adv[g, len(group) :] == 0).all()
        assert want.n_valid == got.n_valid[g]
        assert close(want.mean_reward, got.mean_reward[g])
        assert close(want.lambda_raw, got.lambda_raw[g])
        assert close(want.lambda_applied, got.lambda_applied[g])
        assert close(want.mean_shift, got.mean_shift[g])
        assert close(want.positive_total_before, got.positive_total_before[g])
        assert close(want.positive_total_after, got.positive_total_after[g])
        if normalize:
            assert close(want.reward_std, got.reward_std[g])
        # `capped` may only differ when λ_raw equals λ_max up to rounding.
        if want.lambda_raw is not None and lambda_max is not None:
            if abs(want.lambda_raw - lambda_max) > 1e-9:
                assert want.capped == bool(got.capped[g])
        else:
            assert not got.capped[g]
