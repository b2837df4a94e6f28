"""Grade one group: features → contributions → score → tier and rank, each with its evidence."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from grading.diffs import Patch
from grading.grader.analysis.catalogue import BY_NAME, NAMES
from grading.grader.analysis.features import extract
from grading.grader.analysis.group import GroupContext
from grading.grader.analysis.inputs import AnalysisInput, CodeRef, Observation, runs
from grading.grader.analysis.model import (
    Fit,
    LinearModel,
    Mode,
    Severity,
    load_default_fit,
    rank,
)


@dataclass(frozen=True)
class Contribution:
    feature: str
    value: float
    weight: float
    contribution: float
    severity: Severity
    category: str  # the verdict's severe-issue category
    criterion: str  # the rubric criterion it lowers
    description: str
    evidence: tuple[CodeRef, ...]
    details: tuple[str, ...]


@dataclass(frozen=True)
class CandidateResult:
    key: str
    score: float
    tier: int
    rank_in_tier: int
    changed_lines: int
    contributions: tuple[Contribution, ...]  # non-zero ones, largest first
    observations: Mapping[str, Observation]
    # The patch could not be read as a diff: nothing can vouch for it, so it ranks last in T3.
    unreadable: bool = False

    @property
    def severe(self) -> tuple[Contribution, ...]:
        return tuple(c for c in self.contributions if c.severity == "severe")

    @property
    def moderate(self) -> tuple[Contribution, ...]:
        return tuple(c for c in self.contributions if c.severity == "moderate")

    @property
    def exploit_suspected(self) -> bool:
        return any(BY_NAME[c.feature].exploit for c in self.contributions)


@dataclass(frozen=True)
class GroupResult:
    mode: Mode  # "reference" when the task had a reference patch, else "consensus"
    fit_version: str
    candidates: dict[str, CandidateResult]
    ordering: list[str]  # best first
    ties: list[list[str]]  # candidates sharing a rank (same change, or no evidence of an order)
    cuts: tuple[float, float]  # the model's tier cuts (T2 from the first, T3 from the second)
    # One changed line per candidate, for judgements whose feature has no line of its own.
    fallback: dict[str, CodeRef]


def observe(inp: AnalysisInput) -> tuple[Mode, GroupContext, dict[str, dict[str, Observation]]]:
    """Every feature of every candidate; independent of any fit (the fit only weighs them)."""
    ctx = GroupContext(inp)
    mode: Mode = "reference" if ctx.reference is not None else "consensus"
    return mode, ctx, extract(ctx)


def analyse_group(inp: AnalysisInput, fit: Fit | None = None) -> GroupResult:
    fit = fit or load_default_fit()
    mode, ctx, observed = observe(inp)
    return weigh(mode, ctx, observed, fit.model(mode), fit.version)


def weigh(
    mode: Mode,
    ctx: GroupContext,
    observed: Mapping[str, Mapping[str, Observation]],
    model: LinearModel,
    version: str,
) -> GroupResult:
    keys = list(observed)
    values = [{n: o.value for n, o in observed[k].items()} for k in keys]
    scores = [model.score(v) for v in values]
    unreadable = [not ctx.patches[k].files for k in keys]
    worst = max([s for s, bad in zip(scores, unreadable, strict=True) if not bad], default=0.0)
    scores = [
        worst + model.cuts[1] + 1 if bad else s for s, bad in zip(scores, unreadable, strict=True)
    ]
    tiers = [3 if bad else model.tier(v) for v, bad in zip(values, unreadable, strict=True)]
    sizes = [ctx.patches[k].changed_lines() for k in keys]
    same = [ctx.patches[k].normalised for k in keys]
    ranks = rank(scores, tiers, sizes, same)
    results = {}
    for i, k in enumerate(keys):
        contribs = []
        for name in NAMES:
            obs = observed[k][name]
            c = model.contribution(name, obs.value)
            if c <= 0:
                continue
            spec = BY_NAME[name]
            contribs.append(
                Contribution(name, obs.value, model.weights.get(name, 0.0), round(c, 6),
                             model.severity(name, c), spec.category, spec.criterion,
                             spec.description, obs.evidence, obs.details)
            )  # fmt: skip
        contribs.sort(key=lambda c: -c.contribution)
        results[k] = CandidateResult(k, round(scores[i], 6), tiers[i], ranks[i], sizes[i],
                                     tuple(contribs), observed[k], unreadable[i])  # fmt: skip
    # Tied candidates stay in score order (best first), then by key: a stable, readable order.
    ordering = sorted(keys, key=lambda k: (results[k].tier, results[k].rank_in_tier,
                                           results[k].score, k))  # fmt: skip
    groups: dict[tuple[int, int], list[str]] = {}
    for k in ordering:
        groups.setdefault((results[k].tier, results[k].rank_in_tier), []).append(k)
    ties = [g for g in groups.values() if len(g) > 1]
    fallback = {k: ref for k in keys if (ref := _first_change(k, ctx.patches[k])) is not None}
    return GroupResult(mode, version, results, ordering, ties, model.cuts, fallback)


def _first_change(key: str, patch: Patch) -> CodeRef | None:
    for fp in patch.files:
        if fp.added:
            (start, end), *_ = runs(sorted(fp.added))
            return CodeRef(key, fp.path, start, end, "post")
        if fp.removed:
            (start, end), *_ = runs(sorted(fp.removed))
            return CodeRef(key, fp.old_path or fp.path, start, end, "pre")
    return None
