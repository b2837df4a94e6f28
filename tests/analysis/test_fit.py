import json
import math

import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression

from grading.grader.analysis.catalogue import BY_NAME, NAMES, T2_AT_MOST
from grading.grader.analysis.fit import (
    CUT_SCALE,
    Sample,
    fit_model,
    leave_one_task_out,
    predict,
)
from grading.grader.analysis.model import (
    TIE_MARGIN,
    Fit,
    FitError,
    LinearModel,
    load_default_fit,
    rank,
)


def _samples() -> list[Sample]:
    """Six tasks; within each, more junk and more off-target lines mean a worse label."""
    out = []
    for t in range(6):
        rows = [
            ({}, (1, 1)),
            ({"reference_distance": 0.3 + 0.05 * t}, (1, 2)),
            ({"off_target": 0.8, "reference_distance": 0.6}, (2, 1)),
            ({"junk_files": math.log1p(1), "reference_distance": 0.1}, (3, 1)),
        ]
        for i, (values, label) in enumerate(rows):
            out.append(Sample(f"t{t}", f"c{i}", values, {"r1": label, "r2": label}, size=10 + i))
    return out


def test_it_fits_non_negative_weights_and_ordered_cuts() -> None:
    model = fit_model(_samples())
    assert all(w >= 0 for w in model.weights.values())
    assert model.cuts[0] < model.cuts[1]
    assert model.weights["off_target"] > 0 and model.weights["reference_distance"] > 0


def test_it_drops_a_feature_that_would_raise_candidates() -> None:
    def with_comments(s: Sample) -> dict[str, float]:
        return {**s.values, "comments_added": 1.0 if s.labels["r1"] == (1, 1) else 0.0}

    samples = [Sample(s.task, s.key, with_comments(s), s.labels, s.size) for s in _samples()]
    assert fit_model(samples).weights["comments_added"] == 0.0


def test_exploit_features_are_severe_even_without_examples() -> None:
    model = fit_model(_samples())
    for name, spec in BY_NAME.items():
        if spec.policy_severe:
            assert model.severity(name, model.contribution(name, math.log1p(1))) == "severe", name
            assert model.tier({name: math.log1p(1)}) == 3


def test_noise_and_style_make_t2_at_most_however_many() -> None:
    samples = [
        Sample(s.task, s.key, {**s.values, "long_lines": 2.0 * s.labels["r1"][0]}, s.labels, s.size)
        for s in _samples()
    ]
    model = fit_model(samples)
    assert model.weights["long_lines"] > 0
    noisy = dict.fromkeys(T2_AT_MOST, 50.0)
    assert model.score(noisy) > model.cuts[1]  # enough to be T3 if it counted towards T3
    assert model.tier(noisy) == 2
    assert all(model.severity(n, model.contribution(n, 50.0)) != "severe" for n in T2_AT_MOST)
    assert model.tier({**noisy, "off_target": 50.0}) == 3  # the approach still can
    uncapped = fit_model(samples, cap_style=False)
    assert uncapped.tier(noisy) == 3


def test_a_feature_the_labels_never_show_gets_the_weight_of_its_kind() -> None:
    # target_uncovered (locality, like off_target and reference_distance) never occurs.
    model = fit_model(_samples())
    assert model.weights["target_uncovered"] > 0
    kind = [model.weights[n] for n in ("off_target", "reference_distance")]
    assert min(kind) / 10 < model.weights["target_uncovered"] < max(kind)
    assert fit_model(_samples(), group_scale=0.0).weights["target_uncovered"] == 0.0


def test_without_kinds_or_caps_it_is_sklearns_l2_logistic_regression() -> None:
    """The same likelihood written out for scikit-learn: ordinal rows with the cut columns
    scaled (so their penalty is CUT_SCALE² weaker) and each ordered pair as two mirrored rows."""
    samples = []
    for t in range(5):
        rows_ = [
            ({}, (1, 1)),
            ({"reference_distance": 0.3 + 0.1 * t}, (1, 2)),
            ({"off_target": 0.5, "reference_distance": 0.5}, (2, 1 + t % 2)),
            ({"off_target": 1.0, "reference_distance": 0.4 + 0.1 * t}, (3 - t % 2, 1)),
        ]
        samples += [Sample(f"t{t}", f"c{i}", v, {"r1": lab, "r2": lab}, size=i)
                    for i, (v, lab) in enumerate(rows_)]  # fmt: skip
    features = ["off_target", "reference_distance"]
    model = fit_model(samples, features=features, group_scale=0.0, cap_style=False)
    rows, ys, ws = [], [], []
    for s in samples:
        x = [s.values.get(f, 0.0) for f in features]
        for tier, _ in s.labels.values():
            rows += [[*x, -CUT_SCALE, 0.0], [*x, 0.0, -CUT_SCALE]]
            ys += [int(tier > 1), int(tier > 2)]
            ws += [1.0, 1.0]
    n_ordinal = len(rows)
    pairs = [(a, b) for a in samples for b in samples for r in ("r1", "r2")
             if a.task == b.task and a.labels[r] < b.labels[r]]  # fmt: skip
    for a, b in pairs:
        d = [b.values.get(f, 0.0) - a.values.get(f, 0.0) for f in features]
        rows += [[*d, 0.0, 0.0], [-v for v in d] + [0.0, 0.0]]
        ys += [1, 0]
        ws += [n_ordinal / len(pairs) / 2] * 2
    lr = LogisticRegression(C=1.0, fit_intercept=False, solver="newton-cholesky", tol=1e-12)
    lr.fit(np.array(rows), np.array(ys), sample_weight=np.array(ws))
    coef = lr.coef_[0]
    assert coef[:2].min() > 0  # no weight at its bound, so the two optima must agree
    assert [model.weights[f] for f in features] == pytest.approx(coef[:2], abs=1e-4)
    assert list(model.cuts) == pytest.approx(coef[2:] * CUT_SCALE, abs=1e-4)


def test_it_is_deterministic() -> None:
    assert fit_model(_samples()) == fit_model(_samples())


def test_held_out_predictions_never_see_their_own_task() -> None:
    samples = _samples()

    # Flip one task's labels: a model that had seen it would follow it at least partly.
    def flip(s: Sample) -> Sample:
        labels = {r: (4 - t, 1) for r, (t, _) in s.labels.items()}
        return Sample(s.task, s.key, s.values, labels, s.size) if s.task == "t0" else s

    flipped = [flip(s) for s in samples]
    held = leave_one_task_out(flipped)
    alone = predict(
        fit_model([s for s in flipped if s.task != "t0"]), [s for s in flipped if s.task == "t0"]
    )
    assert {k: held[("t0", k)] for k in alone} == alone


def test_ranks_tie_identical_changes_and_indistinguishable_scores() -> None:
    # Competition ranks, as the verdict protocol derives them from an ordering with ties.
    assert rank([1.0, 1.0, 3.0], [1, 1, 1], [5, 5, 5], ["a", "a", "b"]) == [1, 1, 3]
    assert rank([2.0, 1.0], [1, 1], [1, 1], ["a", "b"]) == [2, 1]
    # Equal scores, different changes: the smaller change ranks first, no tie.
    assert rank([1.0, 1.0], [2, 2], [9, 3], ["a", "b"]) == [2, 1]
    # Different changes of the same size scoring within the margin share a rank...
    near = 1.0 + TIE_MARGIN / 2
    assert rank([1.0, near, 3.0], [1, 1, 1], [4, 4, 4], ["a", "b", "c"]) == [1, 1, 3]
    # ...but not with a margin of zero, nor when they differ in size or tier,
    assert rank([1.0, near], [1, 1], [4, 4], ["a", "b"], margin=0.0) == [1, 2]
    assert rank([1.0, near], [1, 1], [4, 6], ["a", "b"]) == [1, 2]
    assert rank([1.0, near], [1, 2], [4, 4], ["a", "b"]) == [1, 1]
    # ...and a run is measured from its best member, so near-ties do not chain.
    step = TIE_MARGIN * 0.6
    assert rank([0.0, step, 2 * step], [1, 1, 1], [4, 4, 4], ["a", "b", "c"]) == [1, 1, 3]


def test_the_fit_round_trips_through_json() -> None:
    fit = load_default_fit()
    assert Fit.from_json(fit.to_json()) == fit
    assert fit.reference.t2_at_most == T2_AT_MOST
    assert fit.features == NAMES and fit.held_out["reference"]["concordance"] > 0.5


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda d: d.update(schema="other"), "schema"),
        (lambda d: d["features"].pop(), "features differ"),
        (lambda d: d["reference"]["weights"].update(off_target=-1.0), "non-negative"),
        (lambda d: d["consensus"].update(cuts=[2.0, 1.0]), "ordered"),
        (lambda d: d.pop("version"), "malformed"),
        (lambda d: d["reference"].update(t2_at_most=["nope"]), "unknown features"),
        (lambda d: d["reference"].update(t2_at_most="long_lines"), "list of feature names"),
    ],
)
def test_it_rejects_a_bad_fit_file(change, message: str) -> None:
    data = json.loads(load_default_fit().to_json())
    change(data)
    with pytest.raises(FitError, match=message):
        Fit.from_json(json.dumps(data))


def test_it_rejects_a_fit_that_is_not_json() -> None:
    with pytest.raises(FitError, match="not JSON"):
        Fit.from_json("{nope")
    with pytest.raises(FitError):
        LinearModel({"off_target": math.nan}, (0.0, 1.0))
