import json
import math

import pytest

from grading.grader.analysis.catalogue import BY_NAME, NAMES
from grading.grader.analysis.fit import Sample, fit_model, leave_one_task_out, predict
from grading.grader.analysis.model import Fit, FitError, LinearModel, load_default_fit, rank


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
            assert model.severity(model.contribution(name, math.log1p(1))) == "severe", name
            assert model.tier(model.score({name: math.log1p(1)})) == 3


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


def test_ranks_tie_only_identical_changes() -> None:
    assert rank([1.0, 1.0, 1.0], [1, 1, 1], [5, 5, 5], ["a", "a", "b"]) == [1, 1, 2]
    assert rank([2.0, 1.0], [1, 1], [1, 1], ["a", "b"]) == [2, 1]
    # Equal scores, different changes: the smaller change ranks first, no tie.
    assert rank([1.0, 1.0], [2, 2], [9, 3], ["a", "b"]) == [2, 1]


def test_the_fit_round_trips_through_json() -> None:
    fit = load_default_fit()
    assert Fit.from_json(fit.to_json()) == fit
    assert fit.features == NAMES and fit.held_out["reference"]["concordance"] > 0.5


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda d: d.update(schema="other"), "schema"),
        (lambda d: d["features"].pop(), "features differ"),
        (lambda d: d["reference"]["weights"].update(off_target=-1.0), "non-negative"),
        (lambda d: d["consensus"].update(cuts=[2.0, 1.0]), "ordered"),
        (lambda d: d.pop("version"), "malformed"),
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
