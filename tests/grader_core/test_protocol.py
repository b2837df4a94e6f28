from typing import Any

from grading.grader.backends.scripted import ScriptedBackend
from grading.grader.heuristic import HeuristicBackend
from grading.grader.loop import run_grader
from grading.grader.protocol import GRADE, RANK, ranks_from_ordering, submission_specs
from grading.grader.tokens import json_tokens
from tests.grader_core.fixtures import Fixture


def _strict_problems(schema: Any, where: str = "") -> list[str]:
    """What OpenAI's strict mode (and constrained decoders) cannot take."""
    out: list[str] = []
    if isinstance(schema, dict):
        for bad in ("oneOf", "anyOf", "allOf", "propertyNames", "patternProperties", "$ref"):
            if bad in schema:
                out.append(f"{where}: {bad}")
        if schema.get("type") == "object":
            props = schema.get("properties", {})
            if schema.get("additionalProperties") is not False:
                out.append(f"{where}: additionalProperties must be false")
            if sorted(schema.get("required", [])) != sorted(props):
                out.append(f"{where}: every property must be required")
        for key, value in schema.items():
            out += _strict_problems(value, f"{where}/{key}")
    elif isinstance(schema, list):
        for i, value in enumerate(schema):
            out += _strict_problems(value, f"{where}/{i}")
    return out


def test_the_submission_schemas_fit_strict_tool_calling() -> None:
    for spec in submission_specs():
        assert _strict_problems(spec.parameters) == [], spec.name


def test_every_field_of_the_submission_tools_is_described() -> None:
    grade = submission_specs()[0].parameters
    for name, prop in grade["properties"].items():
        assert prop.get("description"), name
    tier = grade["properties"]["tier"]
    assert tier["enum"] == [1, 2, 3, None]  # an integer, never "T1"


def test_ranks_follow_from_ordering_and_ties() -> None:
    tiers = {"A": 1, "B": 1, "C": 1, "D": 2, "E": 3, "F": 3}
    ranks = ranks_from_ordering(list("ABCDEF"), tiers, [["A", "B"], ["E", "F"]])
    assert ranks == {"A": 1, "B": 1, "C": 3, "D": 1, "E": 1, "F": 1}


def test_a_legacy_transcript_with_one_submit_verdict_replays_in_parts(fx: Fixture) -> None:
    """A recording made before the incremental verdict still produces its verdict."""
    group = fx.group(repo=False)
    heuristic = run_grader(group, HeuristicBackend(), seed=2)
    legacy_verdict = {k: v for k, v in heuristic.alias_verdict.items() if k != "budget_use"}
    transcript = [
        {"tool_calls": [{"id": "l1", "name": "list_candidates", "arguments": {}}]},
        {
            "tool_calls": [
                {"id": "s1", "name": "submit_verdict", "arguments": {"verdict": legacy_verdict}}
            ]
        },
    ]
    replayed = run_grader(group, ScriptedBackend(transcript), seed=2)
    assert replayed.status == "ok", replayed.problems
    names = [e.name for e in replayed.tool_log]
    assert names.count(GRADE) == 4 and names[-1] == RANK
    assert {k: v for k, v in replayed.alias_verdict.items() if k != "budget_use"} == legacy_verdict


def test_each_grade_is_small_enough_for_any_output_limit(fx: Fixture) -> None:
    from grading.grader.protocol import verdict_to_turns

    out = run_grader(fx.group(repo=False), HeuristicBackend(), seed=2)
    calls = [c for turn in verdict_to_turns(out.alias_verdict) for c in turn]
    assert max(json_tokens(args) for _, args in calls) < 2000
