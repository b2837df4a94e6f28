"""The fitted artefact (weights and tier cuts) and how it turns observations into tiers and ranks.

    score  = Σ_j w_j · x_j                  (x_j ≥ 0 the feature value, w_j ≥ 0 its fitted weight)
    severe = Σ_j w_j · x_j over the features that can reach T3 (all but noise and style)
    tier   = 3 if severe ≥ cut_2, else 2 if score ≥ cut_1, else 1

Scores are badness in the fitted model's logit units (see `fit.py`): P(tier > 1) = σ(score −
cut_1) and P(tier > 2) = σ(severe − cut_2). Noise and style (`catalogue`, `max_tier=2`) thus
make T2 at worst however many there are, as the review rubric says; ranks come from the whole
score. A single finding whose contribution reaches cut_2 is **severe** (it puts the candidate in
T3 on its own); one that reaches cut_1 / 2 is **moderate** (two of them make T2). A `Fit` holds
one model for groups with a reference patch and one for groups without.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

from grading.grader.analysis.catalogue import BY_NAME, NAMES, T2_AT_MOST

SCHEMA = "gagar.analysis-fit.v1"
DEFAULT_FIT_PATH = Path(__file__).with_name("default_fit.json")
Severity = Literal["severe", "moderate", "minor"]
# The shipped rule is the issue's: candidates tie only when their normalised changes are identical
# (margin 0). `rank` can also tie same-sized changes scoring within a margin of each other (the
# model cannot tell them apart); measured held out at 0.1 logit that was half a pair of 95 more
# concordance and no real gain over "smaller diff" (its paired lower bound −0.011 → 0.000), while
# it ties changes that are not equivalent, so it stays a variant `bench grader_quality` prints.
TIE_MARGIN = 0.0
NEAR_TIE_MARGIN = 0.1
Mode = Literal["reference", "consensus"]


class FitError(ValueError):
    """A fit artefact that does not match this engine (schema, features, values)."""


@dataclass(frozen=True)
class LinearModel:
    weights: dict[str, float]
    cuts: tuple[float, float]
    # Features that never count towards the T3 cut (the catalogue's noise and style).
    t2_at_most: frozenset[str] = T2_AT_MOST

    def __post_init__(self) -> None:
        if any(not math.isfinite(w) or w < 0 for w in self.weights.values()):
            raise FitError("weights must be finite and non-negative")
        low, high = self.cuts
        if not (math.isfinite(low) and math.isfinite(high)) or low > high:
            raise FitError("cuts must be finite and ordered")

    def contribution(self, name: str, value: float) -> float:
        return self.weights.get(name, 0.0) * value

    def score(self, values: Mapping[str, float]) -> float:
        return sum(self.contribution(n, v) for n, v in values.items())

    def severe_score(self, values: Mapping[str, float]) -> float:
        """The part of the score that counts towards the T3 cut (noise and style do not)."""
        return sum(self.contribution(n, v) for n, v in values.items() if n not in self.t2_at_most)

    def tier(self, values: Mapping[str, float]) -> int:
        return self.tier_of(self.score(values), self.severe_score(values))

    def tier_of(self, score: float, severe: float) -> int:
        return 3 if severe >= self.cuts[1] else 2 if score >= self.cuts[0] else 1

    def severity(self, name: str, contribution: float) -> Severity:
        if contribution > 0 and contribution >= self.cuts[1] and name not in self.t2_at_most:
            return "severe"
        if contribution > 0 and contribution >= self.cuts[0] / 2:
            return "moderate"
        return "minor"


@dataclass(frozen=True)
class Fit:
    """A versioned, JSON-serialisable fit: what produced it and how well it did held out."""

    version: str
    reference: LinearModel
    consensus: LinearModel
    features: tuple[str, ...] = NAMES
    settings: dict[str, Any] = field(default_factory=dict)
    trained_on: dict[str, Any] = field(default_factory=dict)
    held_out: dict[str, Any] = field(default_factory=dict)  # labelled leave-one-task-out figures
    schema: str = SCHEMA

    def model(self, mode: Mode) -> LinearModel:
        return self.reference if mode == "reference" else self.consensus

    def same_as(self, other: Fit, tol: float = 2e-6) -> bool:
        """Same version, features and (within `tol`) weights and cuts: a reproduced fit. The
        artefact stores them rounded to 6 decimals, so optima that differ in their last bits
        (another BLAS, another summation order) can be one unit of the 6th decimal apart."""
        if (self.version, self.features) != (other.version, other.features):
            return False
        for mode in ("reference", "consensus"):
            a, b = self.model(mode), other.model(mode)
            if set(a.weights) != set(b.weights) or a.t2_at_most != b.t2_at_most:
                return False
            pairs = [(a.weights[n], b.weights[n]) for n in a.weights]
            pairs += list(zip(a.cuts, b.cuts, strict=True))
            if any(abs(x - y) > tol for x, y in pairs):
                return False
        return True

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["features"] = list(self.features)
        for mode in ("reference", "consensus"):
            out[mode]["cuts"] = list(out[mode]["cuts"])
            out[mode]["t2_at_most"] = sorted(out[mode]["t2_at_most"])
        return out

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2, sort_keys=True) + "\n"

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Fit:
        if data.get("schema") != SCHEMA:
            raise FitError(f"schema must be {SCHEMA!r}, not {data.get('schema')!r}")
        features = set(data.get("features", ()))
        if features != set(NAMES):
            raise FitError(
                "fit features differ from the engine's: missing "
                f"{sorted(set(NAMES) - features)}, unknown {sorted(features - set(NAMES))}"
            )
        try:
            models = {
                mode: LinearModel(
                    {str(k): float(v) for k, v in data[mode]["weights"].items()},
                    (float(data[mode]["cuts"][0]), float(data[mode]["cuts"][1])),
                    frozenset(_names(data[mode].get("t2_at_most", sorted(T2_AT_MOST)))),
                )
                for mode in ("reference", "consensus")
            }
            return cls(
                version=str(data["version"]),
                reference=models["reference"],
                consensus=models["consensus"],
                features=tuple(data["features"]),
                settings=dict(data.get("settings", {})),
                trained_on=dict(data.get("trained_on", {})),
                held_out=dict(data.get("held_out", {})),
            )
        except (KeyError, TypeError, IndexError, ValueError) as exc:
            if isinstance(exc, FitError):
                raise
            raise FitError(f"malformed fit: {exc!r}") from exc

    @classmethod
    def from_json(cls, text: str) -> Fit:
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise FitError(f"fit is not JSON: {exc.msg} at line {exc.lineno}") from exc
        if not isinstance(data, dict):
            raise FitError("fit must be a JSON object")
        return cls.from_dict(data)


def _names(value: object) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise FitError("t2_at_most must be a list of feature names")
    unknown = sorted(set(value) - set(NAMES))
    if unknown:
        raise FitError(f"t2_at_most names unknown features: {unknown}")
    return value


def load_default_fit() -> Fit:
    """The shipped fit (made by `python -m grading.grader.analysis.fit_default`)."""
    return Fit.from_json(DEFAULT_FIT_PATH.read_text(encoding="utf-8"))


def policy_floor(model: LinearModel, one: float = math.log1p(1)) -> LinearModel:
    """Give every exploit feature at least the weight that makes one occurrence severe."""
    floor = model.cuts[1] / one * (1 + 1e-6) if model.cuts[1] > 0 else 1.0
    weights = dict(model.weights)
    for name in weights:
        if name in BY_NAME and BY_NAME[name].policy_severe:
            weights[name] = max(weights[name], floor)
    return LinearModel(weights, model.cuts, model.t2_at_most)


def rank(
    scores: Sequence[float],
    tiers: Sequence[int],
    sizes: Sequence[int],
    same: Sequence[object],
    margin: float = TIE_MARGIN,
) -> list[int]:
    """Rank in tier (1 = best) by score, then by smaller change. Candidates share a rank when
    they have the same normalised change (`same`); with a positive `margin` (a measured variant,
    not the shipped rule: see TIE_MARGIN) also when they are in the same tier, change as many
    lines and score within `margin` of the best of them. Competition ranks (1, 1, 3), as the
    verdict protocol derives them from an ordering with ties (`protocol.ranks_from_ordering`).
    One rank per candidate, in input order."""
    order = sorted(range(len(scores)), key=lambda i: (tiers[i], scores[i], sizes[i], i))
    ranks = [0] * len(scores)
    position: dict[int, int] = {}
    given: dict[object, int] = {}
    run: tuple[int, int, float, int] | None = None  # (tier, size, score, rank) opening a near-tie
    for i in order:
        position[tiers[i]] = position.get(tiers[i], 0) + 1
        if same[i] in given:
            ranks[i] = given[same[i]]
            continue
        if run is not None and run[:2] == (tiers[i], sizes[i]) and scores[i] - run[2] < margin:
            ranks[i] = given[same[i]] = run[3]
            continue
        ranks[i] = given[same[i]] = position[tiers[i]]
        run = (tiers[i], sizes[i], scores[i], ranks[i])
    return ranks
