"""κ and alpha against sklearn and krippendorff, the references named in method §7."""

import warnings

import krippendorff
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.metrics import cohen_kappa_score
from sklearn.metrics import confusion_matrix as sk_confusion

from review.stats.agreement import (
    alpha_from_coincidences,
    cluster_coincidences,
    cluster_confusions,
    confusion_matrix,
    criterion_kappas,
    kappa_from_confusions,
    krippendorff_alpha_ordinal,
    raw_agreement,
    weighted_kappa,
)


def sk_kappa(a, b, weights, labels=(1, 2, 3)):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # UndefinedMetricWarning on degenerate inputs
        return cohen_kappa_score(a, b, weights=weights, labels=list(labels))


def ref_alpha(data, domain=(1, 2, 3)):
    """krippendorff.alpha, with its ValueError / NaN for undefined cases mapped to None."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            value = krippendorff.alpha(
                reliability_data=data, value_domain=list(domain), level_of_measurement="ordinal"
            )
    except ValueError:
        return None
    return None if np.isnan(value) else value


@pytest.mark.parametrize("weights", ["quadratic", "linear", None])
def test_it_matches_sklearn_kappa_on_random_tiers(weights):
    rng = np.random.default_rng(0)
    for _ in range(300):
        n = int(rng.integers(1, 60))
        a, b = rng.integers(1, 4, n), rng.integers(1, 4, n)
        expected, got = sk_kappa(a, b, weights), weighted_kappa(a, b, weights=weights)
        assert got is not None
        assert (np.isnan(expected) and np.isnan(got)) or got == pytest.approx(expected, abs=1e-12)


@given(
    st.lists(st.tuples(st.integers(1, 5), st.integers(1, 5)), min_size=1, max_size=80),
    st.sampled_from(["quadratic", "linear", None]),
)
@settings(max_examples=200, deadline=None)
def test_it_matches_sklearn_kappa_on_the_rubric(pairs, weights):
    a, b = np.array(pairs).T
    labels = (1, 2, 3, 4, 5)
    expected = sk_kappa(a, b, weights, labels)
    got = weighted_kappa(a, b, labels=labels, weights=weights)
    assert (np.isnan(expected) and np.isnan(got)) or got == pytest.approx(expected, abs=1e-12)


def test_it_returns_nan_like_sklearn_when_both_raters_use_one_label():
    assert np.isnan(sk_kappa([2, 2, 2], [2, 2, 2], "quadratic"))
    assert np.isnan(weighted_kappa([2, 2, 2], [2, 2, 2]))


def test_it_returns_none_for_an_empty_slice():
    assert weighted_kappa([], []) is None
    assert weighted_kappa([np.nan, 1], [2, np.nan]) is None
    assert raw_agreement([], []) is None


def test_it_drops_pairs_with_a_missing_rating():
    a, b = [1, 2, np.nan, 3, 3], [1, 3, 2, np.nan, 3]
    assert weighted_kappa(a, b) == pytest.approx(sk_kappa([1, 2, 3], [1, 3, 3], "quadratic"))
    assert raw_agreement(a, b) == pytest.approx(2 / 3)


def test_it_builds_the_same_confusion_matrix_as_sklearn():
    rng = np.random.default_rng(1)
    a, b = rng.integers(1, 4, 200), rng.integers(1, 4, 200)
    np.testing.assert_array_equal(confusion_matrix(a, b), sk_confusion(a, b, labels=[1, 2, 3]))


def test_it_sums_per_task_confusions_to_the_whole():
    rng = np.random.default_rng(2)
    a, b, task = rng.integers(1, 4, 300), rng.integers(1, 4, 300), rng.integers(0, 20, 300)
    per_task = cluster_confusions(a, b, task, 20)
    np.testing.assert_array_equal(per_task.sum(axis=0), confusion_matrix(a, b))
    assert kappa_from_confusions(per_task.sum(axis=0)) == pytest.approx(sk_kappa(a, b, "quadratic"))


def test_it_computes_kappa_per_rubric_criterion():
    rng = np.random.default_rng(3)
    a, b = rng.integers(1, 6, (100, 5)), rng.integers(1, 6, (100, 5))
    names = ["approach", "precision", "minimality", "side_effects", "consistency"]
    got = criterion_kappas(a, b, names)
    for j, name in enumerate(names):
        expected = sk_kappa(a[:, j], b[:, j], "quadratic", (1, 2, 3, 4, 5))
        assert got[name] == pytest.approx(expected, abs=1e-12)


def test_it_matches_krippendorff_ordinal_alpha_with_missing_ratings():
    rng = np.random.default_rng(4)
    compared = 0
    for _ in range(300):
        raters, units = int(rng.integers(2, 6)), int(rng.integers(2, 40))
        data = rng.integers(1, 4, (raters, units)).astype(float)
        data[rng.random(data.shape) < rng.uniform(0, 0.6)] = np.nan
        expected, got = ref_alpha(data), krippendorff_alpha_ordinal(data)
        if expected is None:
            assert got.value is None and got.reason
        else:
            compared += 1
            assert got.value == pytest.approx(expected, abs=1e-10)
    assert compared > 200


def test_it_matches_krippendorff_on_the_rubric_domain():
    rng = np.random.default_rng(5)
    data = rng.integers(1, 6, (4, 50)).astype(float)
    data[rng.random(data.shape) < 0.2] = np.nan
    got = krippendorff_alpha_ordinal(data, value_domain=(1, 2, 3, 4, 5))
    assert got.value == pytest.approx(ref_alpha(data, (1, 2, 3, 4, 5)), abs=1e-10)


def test_it_explains_alpha_with_a_single_reviewer():
    got = krippendorff_alpha_ordinal([[1, 2, 3, 1]])
    assert got.value is None and "two raters" in got.reason


def test_it_explains_alpha_without_variation():
    got = krippendorff_alpha_ordinal([[2, 2, 2], [2, 2, np.nan]])
    assert got.value is None and "one value" in got.reason


def test_it_explains_alpha_on_an_empty_slice():
    assert krippendorff_alpha_ordinal(np.empty((0, 0))).value is None
    assert krippendorff_alpha_ordinal([[np.nan, np.nan]]).value is None


def test_it_sums_per_task_coincidences_to_the_whole():
    rng = np.random.default_rng(6)
    data = rng.integers(1, 4, (3, 120)).astype(float)
    data[rng.random(data.shape) < 0.3] = np.nan
    per_task = cluster_coincidences(data, rng.integers(0, 15, 120), 15)
    assert alpha_from_coincidences(per_task.sum(axis=0)) == pytest.approx(ref_alpha(data))


def test_it_rejects_values_outside_the_domain():
    with pytest.raises(ValueError, match="outside"):
        krippendorff_alpha_ordinal([[1, 4], [1, 2]])
