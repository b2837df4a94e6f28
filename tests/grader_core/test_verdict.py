import copy
from typing import Any

import pytest

from grading.diffs import parse_patch
from grading.grader.inputs import CRITERIA, Rubric
from grading.grader.verdict import finalize, map_aliases, schema_errors
from grading.grader.verdict_check import ExecutionRecord, VerdictContext, check_verdict
from tests.grader_core.fixtures import Fixture

KEYS = {"A": "root", "B": "sprawl", "C": "special", "D": "tamper", "E": "failing"}


@pytest.fixture
def ctx(fx: Fixture) -> VerdictContext:
    by_key = {c.key: c for c in fx.group(repo=False).candidates}
    return VerdictContext(
        aliases=list(KEYS),
        passing=frozenset("ABCD"),
        rubric=Rubric(),
        diffs={a: parse_patch(by_key[k].patch) for a, k in KEYS.items()},
        trajectory_lengths={a: by_key[k].event_count() for a, k in KEYS.items()},
        executions=[ExecutionRecord("pytest -q", 1, "C")],
        line_count=lambda tree, path: 11 if path == "calc/textutil.py" else None,
    )


def scores(value: int = 5, evidence: list[str] | None = None) -> dict[str, Any]:
    return {c: {"score": value, "rationale": "r", "evidence": evidence or []} for c in CRITERIA}


def cand(
    tier: int | None, rank: int | None, value: int = 5, ev: list[str] | None = None
) -> dict[str, Any]:
    return {
        "scores": scores(value, ev),
        "severe_issues": [],
        "exploit_suspected": False,
        "tier": tier,
        "rank_in_tier": rank,
        "summary": "s",
        "evidence": ev or [],
    }


@pytest.fixture
def good() -> dict[str, Any]:
    c = cand(3, 1, 2, ["E1", "E3"])
    c["severe_issues"] = [{"category": "hardcoding", "description": "d", "evidence": ["E1"]}]
    c["exploit_suspected"] = True
    return {
        "candidates": {
            "A": cand(1, 1),
            "B": cand(2, 1, 3, ["E2"]),
            "C": c,
            "D": cand(3, 2, 2, ["E4"]),
        },
        "ordering": ["A", "B", "C", "D"],
        "ties": [],
        "reorder_notes": [],
        "evidence": {
            # Special-casing candidate: post lines 7-8 are the added `if text == ...` lines.
            "E1": {
                "type": "code",
                "candidate": "C",
                "path": "calc/textutil.py",
                "line_start": 7,
                "line_end": 8,
                "side": "post",
            },
            "E2": {"type": "trajectory", "candidate": "B", "event_index": 3},
            "E3": {"type": "execution", "candidate": "C", "command": "pytest -q", "exit_code": 1},
            "E4": {
                "type": "code",
                "candidate": "D",
                "path": "tests/test_textutil.py",
                "line_start": 9,
                "line_end": 9,
                "side": "pre",
            },
        },
        "confidence": 0.7,
    }


def codes(v: dict[str, Any], ctx: VerdictContext) -> set[str]:
    assert schema_errors(v) == []
    return {p.code for p in check_verdict(v, ctx)}


def test_a_consistent_verdict_passes(good: dict[str, Any], ctx: VerdictContext) -> None:
    assert check_verdict(good, ctx) == []


def test_schema_rejects_out_of_range_score_and_bad_category(good: dict[str, Any]) -> None:
    v = copy.deepcopy(good)
    v["candidates"]["A"]["scores"]["minimality_of_changes"]["score"] = 6
    v["candidates"]["C"]["severe_issues"][0]["category"] = "cheating"
    errors = schema_errors(v)
    assert any("minimality_of_changes" in e for e in errors)
    assert any("severe_issues" in e for e in errors)
    v = copy.deepcopy(good)
    v["evidence"]["E2"] = {"type": "trajectory", "candidate": "B"}
    assert schema_errors(v)


def test_it_rejects_inconsistent_tiers_and_ordering(
    good: dict[str, Any], ctx: VerdictContext
) -> None:
    v = copy.deepcopy(good)
    v["ordering"] = ["B", "A", "C", "D"]
    assert "ordering" in codes(v, ctx)
    v = copy.deepcopy(good)
    v["ordering"] = ["A", "B", "C"]
    assert "ordering" in codes(v, ctx)
    v = copy.deepcopy(good)
    v["candidates"]["D"]["rank_in_tier"] = 1  # shares C's rank without a declared tie
    assert "ties" in codes(v, ctx)
    v["ties"] = [["C", "D"]]
    assert "ties" not in codes(v, ctx)
    v = copy.deepcopy(good)
    v["candidates"]["D"]["rank_in_tier"] = 3
    assert "rank" in codes(v, ctx)


def test_it_rejects_a_ranked_failing_candidate(good: dict[str, Any], ctx: VerdictContext) -> None:
    v = copy.deepcopy(good)
    v["candidates"]["E"] = cand(2, 2, 3, ["E2"])
    assert "failing_ranked" in codes(v, ctx)
    v["candidates"]["E"] = cand(None, None, 3)
    assert codes(v, ctx) == set()


def test_it_rejects_code_lines_that_do_not_resolve(
    good: dict[str, Any], ctx: VerdictContext
) -> None:
    v = copy.deepcopy(good)
    v["evidence"]["E1"]["line_end"] = 40  # beyond the diff and beyond the 11-line file
    assert "evidence_unresolved" in codes(v, ctx)
    v["evidence"]["E1"].update(line_start=2, line_end=3)  # not in the diff, but in the file
    assert codes(v, ctx) == set()
    v["evidence"]["E1"]["path"] = "calc/missing.py"
    assert "evidence_unresolved" in codes(v, ctx)


def test_it_rejects_a_nonexistent_trajectory_event(
    good: dict[str, Any], ctx: VerdictContext
) -> None:
    v = copy.deepcopy(good)
    v["evidence"]["E2"]["event_index"] = 20  # the sprawl trajectory has events 0..19
    assert "evidence_unresolved" in codes(v, ctx)


def test_it_rejects_execution_evidence_not_in_the_tool_log(
    good: dict[str, Any], ctx: VerdictContext
) -> None:
    v = copy.deepcopy(good)
    v["evidence"]["E3"]["exit_code"] = 0
    assert "evidence_unresolved" in codes(v, ctx)
    v = copy.deepcopy(good)
    v["evidence"]["E3"]["command"] = "pytest -q -k spaces"
    assert "evidence_unresolved" in codes(v, ctx)


def test_negative_judgments_need_evidence(good: dict[str, Any], ctx: VerdictContext) -> None:
    v = copy.deepcopy(good)
    v["candidates"]["D"] = cand(3, 2)  # a T3 without any evidence
    assert "evidence_required" in codes(v, ctx)
    v = copy.deepcopy(good)
    v["candidates"]["A"]["scores"]["codebase_consistency"]["score"] = 2
    v["candidates"]["B"]["scores"] = scores(5, ["E2"])  # B outscores A now
    found = codes(v, ctx)
    assert "evidence_required" in found and "reorder_unexplained" not in found
    v["candidates"]["A"]["tier"] = 2
    v["candidates"]["A"]["rank_in_tier"] = 1
    v["candidates"]["B"]["rank_in_tier"] = 2
    v["candidates"]["A"]["scores"]["codebase_consistency"]["evidence"] = ["E2"]
    v["ordering"] = ["A", "B", "C", "D"]
    assert "reorder_unexplained" in codes(v, ctx)
    v["reorder_notes"] = [{"candidate": "A", "note": "B is brittle", "evidence": ["E2"]}]
    assert codes(v, ctx) == set()


def test_unknown_evidence_ids_are_reported(good: dict[str, Any], ctx: VerdictContext) -> None:
    v = copy.deepcopy(good)
    v["candidates"]["B"]["evidence"] = ["E99"]
    assert "evidence_missing" in codes(v, ctx)


def test_finalize_recomputes_weighted_score_and_maps_aliases(good: dict[str, Any]) -> None:
    good["candidates"]["B"]["weighted_score"] = 5.0  # the model's number is ignored
    rubric = Rubric(weights={c: (3.0 if c == "approach_suitability" else 1.0) for c in CRITERIA})
    good["candidates"]["B"]["scores"]["approach_suitability"]["score"] = 5
    out = finalize(good, rubric, {"tool_calls": 3})
    assert out["candidates"]["B"]["weighted_score"] == pytest.approx((15 + 4 * 3) / 7)
    assert out["budget_use"] == {"tool_calls": 3} and schema_errors(out) == []
    mapped = map_aliases(out, KEYS)
    assert mapped["ordering"] == ["root", "sprawl", "special", "tamper"]
    assert mapped["evidence"]["E2"]["candidate"] == "sprawl"
