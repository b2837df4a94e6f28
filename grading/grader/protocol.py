"""The submission tools of the incremental verdict, and how a whole verdict maps onto them.

A grader never sends its verdict in one call: it sends one `grade_candidate` per candidate (each a
few hundred tokens, small enough for any output limit) and finally one `submit_ranking`. The loop
validates and stores each call as it arrives and assembles the `gagar.verdict.v1` verdict itself
(`grading.grader.incremental`).

The schemas are written for strict tool calling (OpenAI `strict`, constrained decoding on vLLM and
SGLang): fixed keys only, every property required (nullable where optional), no `oneOf` and no
maps keyed by alias or id; evidence items are flat objects with a `type` and nullable fields.

`verdict_to_turns` is for deterministic backends (heuristic, analysis, replayed transcripts): they
compute a whole verdict and send it as these calls, so they follow the same protocol as a model.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from grading.grader.backends.base import ToolSpec
from grading.grader.inputs import CRITERIA
from grading.grader.verdict import SEVERE_CATEGORIES
from grading.grader.verdict_check import cited

GRADE = "grade_candidate"
RANK = "submit_ranking"
SUBMISSION_TOOLS = frozenset({GRADE, RANK})
EVIDENCE_FIELDS = (
    "id", "type", "candidate", "path", "line_start", "line_end", "side",
    "event_index", "command", "exit_code",
)  # fmt: skip
_BY_TYPE = {
    "code": ("candidate", "path", "line_start", "line_end", "side"),
    "trajectory": ("candidate", "event_index"),
    "execution": ("command", "exit_code"),
}


def _obj(props: dict[str, Any], description: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {
        "type": "object",
        "properties": props,
        "required": list(props),
        "additionalProperties": False,
    }
    if description:
        out["description"] = description
    return out


def _nullable(kind: str, description: str, **extra: Any) -> dict[str, Any]:
    return {"type": [kind, "null"], "description": description, **extra}


_IDS = {
    "type": "array",
    "items": {"type": "string"},
    "description": "ids of evidence items (defined in this call or an earlier one)",
}
EVIDENCE_ITEM = _obj(
    {
        "id": {"type": "string", "description": "your id for this item, e.g. C-diff-1"},
        "type": {"type": "string", "enum": ["code", "trajectory", "execution"]},
        "candidate": _nullable("string", 'alias, or "base" for the base tree'),
        "path": _nullable("string", "code: file path"),
        "line_start": _nullable("integer", "code: first line, as view_diff/read_file number it"),
        "line_end": _nullable("integer", "code: last line"),
        "side": {
            "type": ["string", "null"],
            "enum": ["pre", "post", None],
            "description": "code: post = added/new lines, pre = removed/original lines",
        },
        "event_index": _nullable("integer", "trajectory: the #index view_trajectory shows"),
        "command": _nullable("string", "execution: the run_check command, exactly"),
        "exit_code": _nullable("integer", "execution: its exit code"),
    },
    "A place the service can check. Fill the fields of its type; set the others to null.",
)
_EVIDENCE_LIST = {"type": "array", "items": EVIDENCE_ITEM, "description": "evidence you cite"}
_SCORE = _obj(
    {
        "score": {"type": "integer", "minimum": 1, "maximum": 5, "description": "1-5, 5 best"},
        "rationale": {"type": "string", "description": "one or two sentences"},
        "evidence": _IDS,
    }
)
GRADE_PARAMETERS = _obj(
    {
        "candidate": {"type": "string", "description": "the alias, e.g. C"},
        "scores": _obj({c: _SCORE for c in CRITERIA}, "all five criteria"),
        "severe_issues": {
            "type": "array",
            "description": "severe issues only; none for a T1 candidate",
            "items": _obj(
                {
                    "category": {"type": "string", "enum": list(SEVERE_CATEGORIES)},
                    "description": {"type": "string"},
                    "evidence": _IDS,
                }
            ),
        },
        "exploit_suspected": {
            "type": "boolean",
            "description": "passes by gaming the tests (tampering, hard-coding)",
        },
        "tier": {
            "type": ["integer", "null"],
            "enum": [1, 2, 3, None],
            "description": "1, 2 or 3 for a passing candidate; null for a failing one",
        },
        "tier_evidence": {**_IDS, "description": "what backs a tier below 1, if no score does"},
        "summary": {"type": "string", "description": "one or two sentences"},
        "evidence": _EVIDENCE_LIST,
    }
)
RANK_PARAMETERS = _obj(
    {
        "ordering": {
            "type": "array",
            "items": {"type": "string"},
            "description": "every passing candidate, best first, sorted by tier",
        },
        "ties": {
            "type": "array",
            "items": {"type": "array", "items": {"type": "string"}},
            "description": "groups of equally good candidates (adjacent in ordering, same tier)",
        },
        "reorder_notes": {
            "type": "array",
            "description": "why a candidate sits above one with a higher weighted score",
            "items": _obj(
                {"candidate": {"type": "string"}, "note": {"type": "string"}, "evidence": _IDS}
            ),
        },
        "confidence": {"type": "number", "minimum": 0, "maximum": 1},
        "evidence": _EVIDENCE_LIST,
    }
)


def submission_specs() -> list[ToolSpec]:
    return [
        ToolSpec(
            GRADE,
            "Record your grade of ONE candidate (scores, severe issues, tier). It is checked "
            "and stored at once; the answer names anything to fix. Send it again to replace it.",
            GRADE_PARAMETERS,
        ),
        ToolSpec(
            RANK,
            "After every passing candidate is graded: the final ordering, ties, reorder notes "
            "and your confidence. This ends grading.",
            RANK_PARAMETERS,
        ),
    ]


# -- deterministic backends ---------------------------------------------------------------------


def flat_evidence(ev_id: str, ev: Mapping[str, Any]) -> dict[str, Any]:
    """A verdict's evidence entry as a flat tool-call item."""
    item: dict[str, Any] = dict.fromkeys(EVIDENCE_FIELDS)
    item.update({k: v for k, v in ev.items() if k in EVIDENCE_FIELDS})
    item["id"] = ev_id
    return item


def evidence_entry(item: Mapping[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """A flat item as a verdict evidence entry, and the fields its type needs but lacks."""
    kind = item.get("type")
    needed = _BY_TYPE.get(str(kind), ())
    missing = [f for f in needed if item.get(f) is None]
    entry: dict[str, Any] = {"type": kind}
    entry.update({f: item[f] for f in needed if item.get(f) is not None})
    if kind == "execution" and item.get("candidate") is not None:
        entry["candidate"] = item["candidate"]
    return entry, missing


def grade_arguments(
    alias: str, cand: Mapping[str, Any], table: Mapping[str, Any], ids: Sequence[str]
) -> dict[str, Any]:
    """One candidate of a verdict as `grade_candidate` arguments, defining evidence `ids`."""
    return {
        "candidate": alias,
        "scores": {
            c: {
                "score": cand["scores"][c]["score"],
                "rationale": cand["scores"][c]["rationale"],
                "evidence": list(cand["scores"][c].get("evidence", [])),
            }
            for c in CRITERIA
        },
        "severe_issues": [dict(i) for i in cand.get("severe_issues", [])],
        "exploit_suspected": bool(cand.get("exploit_suspected")),
        "tier": cand.get("tier"),
        "tier_evidence": list(cand.get("evidence", [])),
        "summary": cand.get("summary", ""),
        "evidence": [flat_evidence(i, table[i]) for i in ids],
    }


def verdict_to_turns(
    verdict: Mapping[str, Any], *, per_turn: int = 8
) -> list[list[tuple[str, dict[str, Any]]]]:
    """A whole verdict (by alias) as turns of submission calls: grades, then the ranking.

    Each evidence entry is defined in the first grade that cites it; entries nobody cites go
    with the candidate they name (or the ranking), so the assembled table is the verdict's own.
    """
    table: Mapping[str, Any] = verdict.get("evidence", {})
    cands: Mapping[str, Any] = verdict["candidates"]
    home: dict[str, str] = {}
    for alias, cand in cands.items():
        for ev_id in cited(cand):
            home.setdefault(ev_id, alias)
    for ev_id, ev in table.items():
        if ev_id not in home and ev.get("candidate") in cands:
            home[ev_id] = ev["candidate"]
    calls = [
        (GRADE, grade_arguments(a, c, table, [i for i in table if home.get(i) == a]))
        for a, c in cands.items()
    ]
    calls.append(
        (
            RANK,
            {
                "ordering": list(verdict["ordering"]),
                "ties": [list(t) for t in verdict.get("ties", [])],
                "reorder_notes": [dict(n) for n in verdict.get("reorder_notes", [])],
                "confidence": verdict.get("confidence", 0.5),
                "evidence": [flat_evidence(i, table[i]) for i in table if i not in home],
            },
        )
    )
    size = max(1, per_turn)
    return [calls[i : i + size] for i in range(0, len(calls), size)]


def ranks_from_ordering(
    ordering: Sequence[str], tiers: Mapping[str, int], ties: Sequence[Sequence[str]]
) -> dict[str, int]:
    """Competition ranks within each tier (1, 1, 3): tied candidates share the first position."""
    tie_of = {a: i for i, tie in enumerate(ties) for a in tie}
    ranks: dict[str, int] = {}
    pos, prev_tier = 0, None
    for i, alias in enumerate(ordering):
        tier = tiers.get(alias)
        pos = 1 if tier != prev_tier else pos + 1
        prev = ordering[i - 1] if i else None
        same_tie = prev is not None and alias in tie_of and tie_of.get(prev) == tie_of[alias]
        ranks[alias] = ranks[prev] if same_tie and tier == prev_tier and prev else pos
        prev_tier = tier
    return ranks
