"""A `gagar.verdict.v1` verdict from a `GroupResult`, for the backend that wraps the engine.

Every negative judgement cites `code` evidence from the candidate's own diff (method §5), so
`check_verdict` resolves it from the diffs alone. Rubric scores are derived from the fitted
contributions (each feature lowers one criterion; a criterion's contributions adding up to the
T3 cut bring it to 1), and the order comes from the fitted score: where that order disagrees with
the rubric average, a reorder note cites the evidence behind the candidate's contributions.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from grading.grader.analysis.engine import CandidateResult, GroupResult
from grading.grader.analysis.inputs import CodeRef
from grading.grader.inputs import CRITERIA

SCHEMA_ID = "gagar.verdict.v1"


def to_verdict(result: GroupResult, aliases: Mapping[str, str]) -> dict[str, Any]:
    """The verdict, naming candidates by `aliases` (candidate key -> alias)."""
    cuts, fallback = result.cuts, result.fallback
    table: dict[str, dict[str, Any]] = {}
    ids: dict[tuple[Any, ...], str] = {}

    def cite(ref: CodeRef) -> str:
        ev = ref.as_evidence(aliases[ref.candidate])
        key = tuple(sorted(ev.items()))
        if key not in ids:
            ids[key] = f"E{len(ids) + 1}"
            table[ids[key]] = ev
        return ids[key]

    cands: dict[str, Any] = {}
    notes = []
    for key in result.ordering:
        res = result.candidates[key]
        cands[aliases[key]] = _candidate(res, cuts, cite, fallback.get(key))
        evidence = cands[aliases[key]]["evidence"]
        if evidence:
            notes.append({
                "candidate": aliases[key],
                "note": f"ordered by the fitted analysis score {res.score:.3f} (lower is better)",
                "evidence": evidence,
            })  # fmt: skip
    return {
        "schema": SCHEMA_ID,
        "candidates": cands,
        "ordering": [aliases[k] for k in result.ordering],
        "ties": [[aliases[k] for k in tie] for tie in result.ties],
        "reorder_notes": notes,
        "evidence": table,
        "confidence": 0.5,
    }


def _candidate(
    res: CandidateResult,
    cuts: tuple[float, float],
    cite: Any,
    fallback: CodeRef | None,
) -> dict[str, Any]:
    lost = dict.fromkeys(CRITERIA, 0.0)
    why: dict[str, list[str]] = {c: [] for c in CRITERIA}
    cited: dict[str, list[str]] = {c: [] for c in CRITERIA}
    severe = []
    every: list[str] = []
    for c in res.contributions:
        refs = list(c.evidence) or ([fallback] if fallback is not None else [])
        ev_ids = list(dict.fromkeys(cite(r) for r in refs))
        lost[c.criterion] += c.contribution
        why[c.criterion].append(f"{c.description} ({c.contribution:.2f})")
        cited[c.criterion] += [i for i in ev_ids if i not in cited[c.criterion]]
        every += [i for i in ev_ids if i not in every]
        if c.severity == "severe":
            detail = "; ".join(c.details[:3])
            severe.append({
                "category": c.category,
                "description": c.description + (f": {detail}" if detail else ""),
                "evidence": ev_ids,
            })  # fmt: skip
    unit = cuts[1] if cuts[1] > 0 else 1.0
    scores = {}
    for crit in CRITERIA:
        score = max(1, 5 - round(4 * min(lost[crit] / unit, 1.0)))
        scores[crit] = {
            "score": score,
            "rationale": "; ".join(why[crit]) or "no concern found",
            "evidence": cited[crit],
        }
    top = ", ".join(f"{c.feature} {c.contribution:.2f}" for c in res.contributions[:3])
    return {
        "scores": scores,
        "severe_issues": severe,
        "exploit_suspected": res.exploit_suspected,
        "tier": res.tier,
        "rank_in_tier": res.rank_in_tier,
        "summary": f"analysis score {res.score:.3f}" + (f" ({top})" if top else ", no finding"),
        "evidence": every,
    }
