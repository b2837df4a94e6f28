"""method §4 test vectors, coefficient rules and edge cases of grading.advantages (no database)."""

import math

import numpy as np
import pytest

from grading.advantages import (
    AttemptInput,
    CoefficientConfig,
    coefficients,
    coefficients_batch,
    redistribute,
    redistribute_batch,
)

TOL = 1e-9


def passer(tier: int, rank: int | None = 1) -> AttemptInput:
    return AttemptInput("valid", 1.0, tier=tier, rank=rank)


def failure() -> AttemptInput:
    return AttemptInput("valid", 0.0)


def infra(reward: float = 1.0) -> AttemptInput:
    return AttemptInput("infra_failed", reward)


def gagar(result):
    return [a.adv_gagar for a in result.attempts]


def grpo(result):
    return [a.adv_grpo for a in result.attempts]


def assert_close(actual, expected, tol=TOL):
    assert len(actual) == len(expected)
    for a, e in zip(actual, expected, strict=True):
        assert a == pytest.approx(e, abs=tol), (actual, expected)


# --- the three method §4 test vectors ------------------------------------------------------

SPEC_GROUP = [passer(1), passer(3), failure(), failure()]


def test_it_reproduces_the_uncapped_spec_vector():
    result = redistribute(SPEC_GROUP, lambda_max=None)

    assert result.lambda_raw == pytest.approx(1 / 0.6, abs=TOL)
    assert result.lambda_applied == pytest.approx(1 / 0.6, abs=TOL)
    assert not result.capped
    assert result.mean_shift == 0.0
    assert_close(gagar(result), [5 / 6, 1 / 6, -0.5, -0.5])
    assert_close(grpo(result), [0.5, 0.5, -0.5, -0.5])
    assert result.positive_total_before == pytest.approx(1.0, abs=TOL)
    assert result.positive_total_after == pytest.approx(1.0, abs=TOL)


def test_it_reproduces_the_capped_spec_vector_before_and_after_recentring():
    result = redistribute(SPEC_GROUP, lambda_max=1.5)

    assert result.lambda_raw == pytest.approx(1 / 0.6, abs=TOL)
    assert result.lambda_applied == pytest.approx(1.5, abs=TOL)
    assert result.capped
    # Before re-centring, from the formula and λ applied ...
    before = [
        result.lambda_applied * a.coefficient * a.adv_grpo if a.adv_grpo > 0 else a.adv_grpo
        for a in result.attempts
    ]
    assert_close(before, [0.75, 0.15, -0.5, -0.5])
    # ... and from the reported shift (the value subtracted).
    assert_close([a + result.mean_shift for a in gagar(result)], [0.75, 0.15, -0.5, -0.5])
    assert result.mean_shift == pytest.approx(-0.025, abs=TOL)
    assert_close(gagar(result), [0.775, 0.175, -0.475, -0.475])
    assert result.positive_total_before == pytest.approx(1.0, abs=TOL)
    assert result.positive_total_after == pytest.approx(0.95, abs=TOL)


def test_it_reproduces_the_g16_single_t3_passer_vector():
    result = redistribute([passer(3), *[failure() for _ in range(15)]], lambda_max=1.5)

    assert result.lambda_raw == pytest.approx(5.0, abs=TOL)
    assert result.lambda_applied == pytest.approx(1.5, abs=TOL)
    assert result.capped
    assert result.attempts[0].adv_gagar == pytest.approx(0.322265625, abs=TOL)
    for attempt in result.attempts[1:]:
        assert attempt.adv_gagar == pytest.approx(-0.021484375, abs=TOL)


def test_the_batch_version_reproduces_the_spec_vectors():
    rewards = np.array([[1.0, 1.0, 0.0, 0.0] + [0.0] * 12, [1.0] + [0.0] * 15])
    valid = np.array([[True] * 4 + [False] * 12, [True] * 16])
    coefs = np.ones_like(rewards)
    coefs[0, :2] = [1.0, 0.2]
    coefs[1, 0] = 0.2

    uncapped = redistribute_batch(rewards, valid, coefs, None)
    capped = redistribute_batch(rewards, valid, coefs, 1.5)

    assert_close(uncapped.adv[0, :4], [5 / 6, 1 / 6, -0.5, -0.5])
    assert_close(capped.adv[0, :4], [0.775, 0.175, -0.475, -0.475])
    assert capped.positive_total_after[0] == pytest.approx(0.95, abs=TOL)
    assert capped.lambda_raw[1] == pytest.approx(5.0, abs=TOL)
    assert capped.adv[1, 0] == pytest.approx(0.322265625, abs=TOL)
    assert_close(capped.adv[1, 1:], [-0.021484375] * 15)
    assert list(capped.capped) == [True, True]
    assert not uncapped.capped.any()
    assert (capped.adv[0, 4:] == 0).all()


# --- coefficients ---------------------------------------------------------------------------


def test_it_gives_t1_best_to_every_tied_best_t1_and_t1_other_to_the_rest():
    group = [passer(1, 2), passer(1, 2), passer(1, 3), passer(3), failure()]
    assert coefficients(group) == [1.0, 1.0, 0.9, 0.2, 1.0]


def test_it_spreads_t2_linearly_from_first_to_last():
    group = [passer(2, 3), passer(2, 1), passer(2, 2)]
    assert_close(coefficients(group), [0.4, 0.85, 0.625])


def test_a_single_t2_gets_the_first_coefficient():
    assert coefficients([passer(2, 7), failure()]) == [0.85, 1.0]


def test_tied_t2_attempts_share_the_first_of_their_positions():
    # Positions over 5 members: 0, 0, 2, 2, 4 → 0.85, 0.85, 0.625, 0.625, 0.4
    group = [passer(2, 1), passer(2, 1), passer(2, 5), passer(2, 5), passer(2, 9)]
    assert_close(coefficients(group), [0.85, 0.85, 0.625, 0.625, 0.4])
    # A tie in last place never reaches t2_last.
    assert_close(coefficients([passer(2, 1), passer(2, 2), passer(2, 2)]), [0.85, 0.625, 0.625])
    # Everyone tied: all first.
    assert coefficients([passer(2, 4)] * 3) == [0.85] * 3


def test_non_passing_attempts_get_coefficient_one_and_their_tiers_are_ignored():
    group = [
        AttemptInput("exploit_confirmed", 1.0, tier=1, rank=1),
        AttemptInput("infra_failed", 1.0, tier=3, rank=1),
        AttemptInput("valid", 0.0, tier=3),
        passer(2, 1),
    ]
    assert coefficients(group) == [1.0, 1.0, 1.0, 0.85]


def test_fallback_gives_every_attempt_coefficient_one():
    assert coefficients([passer(3), passer(2, 1)], fallback=True) == [1.0, 1.0]


def test_it_refuses_a_passer_without_tier_unless_fallback():
    with pytest.raises(ValueError, match="fallback"):
        coefficients([AttemptInput("valid", 1.0), failure()])
    with pytest.raises(ValueError, match="no rank"):
        coefficients([AttemptInput("valid", 1.0, tier=2)])
    # T3 needs no rank: every T3 gets the same coefficient.
    assert coefficients([AttemptInput("valid", 1.0, tier=3)]) == [0.2]


def test_a_custom_config_is_used():
    config = CoefficientConfig(t1_best=1.0, t1_other=0.95, t2_first=0.8, t2_last=0.5, t3=0.1)
    group = [passer(1, 1), passer(1, 2), passer(2, 1), passer(2, 2), passer(3)]
    assert coefficients(group, config) == [1.0, 0.95, 0.8, 0.5, 0.1]


@pytest.mark.parametrize(
    "kwargs",
    [
        {"t3": 0.0},
        {"t3": -0.1},
        {"t1_best": 1.1},
        {"t2_last": 0.9},  # above t2_first
        {"t1_other": 0.8},  # below t2_first
        {"t3": math.nan},
    ],
)
def test_it_rejects_an_inconsistent_config(kwargs):
    with pytest.raises(ValueError):
        CoefficientConfig(**kwargs)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"status": "passed", "reward": 1.0},
        {"status": "valid", "reward": math.inf},
        {"status": "valid", "reward": 1.0, "tier": 4},
        {"status": "valid", "reward": 1.0, "tier": 1, "rank": 0},
    ],
)
def test_it_rejects_a_malformed_attempt(kwargs):
    with pytest.raises(ValueError):
        AttemptInput(**kwargs)


@pytest.mark.parametrize("lambda_max", [0.5, 0.0, math.inf, math.nan])
def test_it_rejects_a_lambda_max_that_is_not_a_finite_number_at_least_one(lambda_max):
    with pytest.raises(ValueError, match="lambda_max"):
        redistribute(SPEC_GROUP, lambda_max=lambda_max)
    with pytest.raises(ValueError, match="lambda_max"):
        redistribute_batch(np.zeros((1, 2)), np.ones((1, 2), bool), np.ones((1, 2)), lambda_max)


def test_coefficients_batch_handles_ties_across_rows():
    tiers = np.array([[1, 1, 1, 3, 0], [2, 2, 2, 2, 2], [2, 1, 3, 0, 0]])
    ranks = np.array([[2, 2, 3, 1, 0], [1, 1, 5, 5, 9], [4, 3, 1, 0, 0]])
    passing = tiers > 0
    got = coefficients_batch(tiers, ranks, passing, fallback_mask=[False, False, True])
    assert_close(list(got[0]), [1.0, 1.0, 0.9, 0.2, 1.0])
    assert_close(list(got[1]), [0.85, 0.85, 0.625, 0.625, 0.4])
    assert list(got[2]) == [1.0] * 5


def test_coefficients_batch_ignores_the_verdict_columns_of_fallback_rows_without_touching_input():
    # A no-verdict group carries garbage in its tier/rank columns; it must neither raise nor
    # leak, and the caller's passing mask is not modified.
    tiers = np.array([[1, 2, 7], [2, 3, 1]])
    ranks = np.array([[1, -5, 0], [1, 0, 1]])
    passing = np.ones((2, 3), bool)
    got = coefficients_batch(tiers, ranks, passing, fallback_mask=[True, False])
    assert list(got[0]) == [1.0, 1.0, 1.0]
    assert list(got[1]) == [0.85, 0.2, 1.0]
    assert passing.all()


@pytest.mark.parametrize(
    ("tiers", "ranks", "match"),
    [
        ([[1, 0]], [[1, 1]], "tier of 1, 2 or 3"),
        ([[4, 1]], [[1, 1]], "tier of 1, 2 or 3"),
        ([[-1, 3]], [[1, 1]], "tier of 1, 2 or 3"),
        ([[2, 1]], [[0, 1]], "rank ≥ 1"),
        ([[1, 3]], [[-2, 0]], "rank ≥ 1"),
    ],
)
def test_coefficients_batch_rejects_a_passer_without_a_usable_tier_or_rank(tiers, ranks, match):
    with pytest.raises(ValueError, match=match):
        coefficients_batch(np.array(tiers), np.array(ranks), np.ones((1, 2), bool))


@pytest.mark.parametrize("dtype", [np.float64, np.bool_, np.str_, object])
def test_coefficients_batch_refuses_tiers_or_ranks_that_are_not_integers(dtype):
    good = np.ones((1, 2), np.int64)
    bad = np.ones((1, 2)).astype(dtype)
    for tiers, ranks in ((bad, good), (good, bad)):
        with pytest.raises(ValueError, match="integer arrays"):
            coefficients_batch(tiers, ranks, np.ones((1, 2), bool))


def test_coefficients_batch_accepts_any_integer_dtype():
    tiers = np.array([[1, 2, 2, 3]], dtype=np.int8)
    ranks = np.array([[1, 2, 1, 0]], dtype=np.uint16)
    got = coefficients_batch(tiers, ranks, np.ones((1, 4), bool))
    assert list(got[0]) == [1.0, 0.4, 0.85, 0.2]


def test_redistribute_batch_leaves_positive_zeros_on_invalid_slots():
    # Invalid slots are zeroed after the mean is subtracted; a -0.0 there would print as "-0.0"
    # in exports.
    rewards = np.array([[1.0, 0.0, np.nan, 1.0], [1.0, 1.0, 5.0, 0.0]])
    valid = np.array([[True, True, False, True], [True, True, False, True]])
    coefs = np.array([[1.0, 1.0, 1.0, 0.2], [1.0, 0.2, 1.0, 1.0]])
    got = redistribute_batch(rewards, valid, coefs)
    for array in (got.adv, got.adv_grpo):
        assert not np.signbit(array[~valid]).any()


# --- edge cases -----------------------------------------------------------------------------


def test_when_all_pass_nothing_is_redistributed():
    result = redistribute([passer(1, 1), passer(2, 1), passer(3)])
    assert result.lambda_raw is None
    assert result.lambda_applied is None
    assert not result.capped
    assert gagar(result) == grpo(result) == [0.0, 0.0, 0.0]
    # Coefficients are still reported from the verdict.
    assert [a.coefficient for a in result.attempts] == [1.0, 0.85, 0.2]


def test_when_none_pass_advantages_are_zero_and_there_is_no_lambda():
    result = redistribute([failure(), failure(), AttemptInput("exploit_confirmed", 1.0)])
    assert gagar(result) == [0.0, 0.0, 0.0]
    assert result.mean_reward == 0.0
    assert result.lambda_raw is None
    assert result.positive_total_before == result.positive_total_after == 0.0


def test_when_all_are_infra_failed_nothing_is_included():
    result = redistribute([infra(), infra(0.0)])
    assert result.n_valid == 0
    assert result.mean_reward is None
    assert [(a.adv_gagar, a.included, a.reward_used) for a in result.attempts] == [
        (0.0, False, None),
        (0.0, False, None),
    ]
    assert all(a.reward_equivalent is None for a in result.attempts)


def test_infra_attempts_are_left_out_of_every_statistic():
    with_infra = redistribute([infra(), passer(1), infra(0.0), passer(3), failure(), failure()])
    without = redistribute(SPEC_GROUP)
    assert with_infra.n_valid == 4
    assert with_infra.mean_reward == without.mean_reward == 0.5
    assert_close([with_infra.attempts[i].adv_gagar for i in (1, 3, 4, 5)], gagar(without))
    assert with_infra.attempts[0].adv_gagar == with_infra.attempts[2].adv_gagar == 0.0
    assert with_infra.lambda_raw == without.lambda_raw


def test_an_exploit_counts_as_reward_zero():
    group = [passer(1), AttemptInput("exploit_confirmed", 1.0, tier=1, rank=1)]
    result = redistribute(group)
    assert result.attempts[1].reward_used == 0.0
    assert_close(grpo(result), [0.5, -0.5])
    assert result.attempts[1].coefficient == 1.0


def test_one_valid_attempt_gets_advantage_zero():
    result = redistribute([passer(3), infra()])
    assert result.n_valid == 1
    assert gagar(result) == [0.0, 0.0]
    assert result.lambda_raw is None
    assert result.attempts[0].reward_equivalent == 1.0


def test_ties_across_t1_share_the_best_coefficient_and_the_advantage():
    result = redistribute([passer(1, 1), passer(1, 1), passer(1, 2), failure()], lambda_max=None)
    tied = [a.adv_gagar for a in result.attempts[:2]]
    assert tied[0] == tied[1] > result.attempts[2].adv_gagar > 0


def test_lambda_max_none_is_the_papers_uncapped_formula():
    group = [passer(3), *[failure() for _ in range(15)]]
    result = redistribute(group, lambda_max=None)
    assert result.lambda_applied == pytest.approx(5.0, abs=TOL)
    assert not result.capped
    # Uncapped: the passer keeps the GRPO advantage, failures are untouched.
    assert result.attempts[0].adv_gagar == pytest.approx(15 / 16, abs=TOL)
    assert all(a.adv_gagar == -1 / 16 for a in result.attempts[1:])


def test_fallback_equals_grpo_and_is_flagged():
    result = redistribute(SPEC_GROUP, fallback=True)
    assert result.fallback
    assert gagar(result) == grpo(result)
    assert result.lambda_raw == 1.0
    assert not result.capped


def test_reward_equivalent_reproduces_the_advantage_under_mean_subtraction():
    result = redistribute([infra(), *SPEC_GROUP], lambda_max=1.5)
    equivalents = [a.reward_equivalent for a in result.attempts if a.included]
    mean = sum(equivalents) / len(equivalents)
    assert_close([r - mean for r in equivalents], gagar(result)[1:], tol=1e-12)


@pytest.mark.parametrize("ddof", [0, 1])
def test_std_normalization_divides_both_advantages_by_sigma_plus_eps(ddof):
    eps = 1e-6
    plain = redistribute(SPEC_GROUP)
    normed = redistribute(SPEC_GROUP, normalize_std=True, std_ddof=ddof, std_eps=eps)
    sigma = float(np.std([1.0, 1.0, 0.0, 0.0], ddof=ddof))
    assert normed.reward_std == pytest.approx(sigma, abs=1e-12)
    scale = sigma + eps
    assert_close(gagar(normed), [a / scale for a in gagar(plain)], tol=1e-12)
    assert_close(grpo(normed), [a / scale for a in grpo(plain)], tol=1e-12)
    assert normed.mean_shift == pytest.approx(plain.mean_shift / scale, abs=1e-12)
    assert normed.positive_total_after == pytest.approx(plain.positive_total_after / scale)
    assert normed.lambda_raw == plain.lambda_raw
    assert normed.capped == plain.capped

    batch = redistribute_batch(
        np.array([[1.0, 1.0, 0.0, 0.0]]),
        np.ones((1, 4), bool),
        np.array([[1.0, 0.2, 1.0, 1.0]]),
        normalize_std=True,
        std_ddof=ddof,
        std_eps=eps,
    )
    assert_close(list(batch.adv[0]), gagar(normed), tol=1e-12)


def test_std_normalization_of_a_degenerate_group_stays_zero():
    result = redistribute([passer(3)], normalize_std=True, std_ddof=1)
    assert result.reward_std == 0.0
    assert gagar(result) == [0.0]
    with pytest.raises(ValueError, match="std_ddof"):
        redistribute([passer(3)], normalize_std=True, std_ddof=2)
