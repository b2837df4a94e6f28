"""The `gagar.verdict.v1` schema: what a grader submits for one group (method §5).

Verdicts name candidates by their per-run aliases (A, B, …); the loop maps aliases back to keys.
The service recomputes the weighted score and fills the budget use itself, so neither is trusted.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from jsonschema import Draft202012Validator

from grading.grader.inputs import CRITERIA, Rubric

SCHEMA_ID = "gagar.verdict.v1"
SEVERE_CATEGORIES = (
    "side_effect",
    "incorrect_edge_case",
    "test_tampering",
    "hardcoding",
    "api_break",
    "other",
)
ALIAS_PATTERN = "^[A-Z]{1,2}$"

_ids: dict[str, Any] = {"type": "array", "items": {"type": "string", "minLength": 1}}
_score = {
    "type": "object",
    "required": ["score", "rationale"],
    "additionalProperties": False,
    "properties": {
        "score": {"type": "integer", "minimum": 1, "maximum": 5},
        "rationale": {"type": "string"},
        "evidence": _ids,
    },
}
_candidate = {
    "type": "object",
    "required": ["scores", "severe_issues", "exploit_suspected", "tier", "rank_in_tier", "summary"],
    "additionalProperties": False,
    "properties": {
        "scores": {
            "type": "object",
            "required": list(CRITERIA),
            "additionalProperties": False,
            "properties": {c: _score for c in CRITERIA},
        },
        "weighted_score": {"type": "number"},
        "severe_issues": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["category", "description", "evidence"],
                "additionalProperties": False,
                "properties": {
                    "category": {"enum": list(SEVERE_CATEGORIES)},
                    "description": {"type": "string"},
                    "evidence": _ids,
                },
            },
        },
        "exploit_suspected": {"type": "boolean"},
        # null for failing candidates: they are context, never ranked.
        "tier": {"type": ["integer", "null"], "minimum": 1, "maximum": 3},
        "rank_in_tier": {"type": ["integer", "null"], "minimum": 1},
        "summary": {"type": "string"},
        "evidence": _ids,  # what backs the tier when no single score or issue does
    },
}
_evidence = {
    "type": "object",
    "required": ["type"],
    "properties": {"type": {"enum": ["code", "trajectory", "execution"]}},
    "oneOf": [
        {
            "properties": {
                "type": {"const": "code"},
                "candidate": {"type": "string"},  # an alias, or "base" for the base tree
                "path": {"type": "string", "minLength": 1},
                "line_start": {"type": "integer", "minimum": 1},
                "line_end": {"type": "integer", "minimum": 1},
                "side": {"enum": ["pre", "post"]},
            },
            "required": ["type", "candidate", "path", "line_start", "line_end", "side"],
        },
        {
            "properties": {
                "type": {"const": "trajectory"},
                "candidate": {"type": "string", "pattern": ALIAS_PATTERN},
                "event_index": {"type": "integer", "minimum": 0},
            },
            "required": ["type", "candidate", "event_index"],
        },
        {
            "properties": {
                "type": {"const": "execution"},
                "candidate": {"type": "string"},  # the tree the check ran in (alias or "base")
                "command": {"type": "string", "minLength": 1},
                "exit_code": {"type": "integer"},
            },
            "required": ["type", "command", "exit_code"],
        },
    ],
}

VERDICT_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "$id": SCHEMA_ID,
    "type": "object",
    "required": ["candidates", "ordering", "evidence", "confidence"],
    "additionalProperties": False,
    "properties": {
        "schema": {"const": SCHEMA_ID},
        "candidates": {
            "type": "object",
            "propertyNames": {"pattern": ALIAS_PATTERN},
            "additionalProperties": _candidate,
        },
        "ordering": {"type": "array", "items": {"type": "string", "pattern": ALIAS_PATTERN}},
        "ties": {
            "type": "array",
            "items": {"type": "array", "items": {"type": "string"}, "minItems": 2},
        },
        "reorder_notes": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["candidate", "note", "evidence"],
                "additionalProperties": False,
                "properties": {
                    "candidate": {"type": "string"},
                    "note": {"type": "string"},
                    "evidence": _ids,
                },
            },
        },
        "evidence": {"type": "object", "additionalProperties": _evidence},
        "confidence": {"type": "number", "minimum": 0, "maximum": 1},
        "budget_use": {
            "type": "object",
            "properties": {
                "tool_calls": {"type": "integer", "minimum": 0},
                "llm_calls": {"type": "integer", "minimum": 0},
                "input_tokens": {"type": "integer", "minimum": 0},
                "output_tokens": {"type": "integer", "minimum": 0},
                "wall_seconds": {"type": "number", "minimum": 0},
            },
        },
    },
}

_VALIDATOR = Draft202012Validator(VERDICT_SCHEMA)


def schema_errors(verdict: Any) -> list[str]:
    """Human-readable schema violations, each prefixed with where it happened."""
    errors = sorted(_VALIDATOR.iter_errors(verdict), key=lambda e: list(e.absolute_path))
    out = []
    for err in errors:
        where = "/".join(str(p) for p in err.absolute_path) or "(root)"
        out.append(f"{where}: {err.message[:300]}")
    return out


def tool_parameters() -> dict[str, Any]:
    """The verdict schema as the `submit_verdict` tool's argument schema."""
    schema = {k: v for k, v in copy.deepcopy(VERDICT_SCHEMA).items() if not k.startswith("$")}
    return {
        "type": "object",
        "required": ["verdict"],
        "properties": {"verdict": schema},
        "additionalProperties": False,
    }


def finalize(
    verdict: Mapping[str, Any], rubric: Rubric, budget_use: Mapping[str, Any]
) -> dict[str, Any]:
    """A copy with our own weighted scores and budget use: the model's numbers are not trusted."""
    out = copy.deepcopy(dict(verdict))
    out["schema"] = SCHEMA_ID
    for cand in out["candidates"].values():
        scores = {c: cand["scores"][c]["score"] for c in CRITERIA}
        cand["weighted_score"] = round(rubric.weighted(scores), 6)
    out["budget_use"] = dict(budget_use)
    return out


def map_aliases(verdict: Mapping[str, Any], alias_to_key: Mapping[str, str]) -> dict[str, Any]:
    """Replace candidate aliases by candidate keys everywhere they are structured data."""

    def k(alias: str) -> str:
        return alias_to_key.get(alias, alias)

    out = copy.deepcopy(dict(verdict))
    out["candidates"] = {k(a): c for a, c in out["candidates"].items()}
    out["ordering"] = [k(a) for a in out["ordering"]]
    out["ties"] = [[k(a) for a in tie] for tie in out.get("ties", [])]
    for note in out.get("reorder_notes", []):
        note["candidate"] = k(note["candidate"])
    for ev in out["evidence"].values():
        if "candidate" in ev:
            ev["candidate"] = k(ev["candidate"])
    return out
