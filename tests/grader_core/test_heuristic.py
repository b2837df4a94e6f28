from typing import Any

from grading.grader.heuristic import HeuristicBackend
from grading.grader.loop import GraderOutcome, run_grader
from tests.grader_core.fixtures import Fixture


def grade(fx: Fixture, **kw: Any) -> GraderOutcome:
    repo = kw.pop("repo", True)
    inject = kw.pop("inject", False)
    out = run_grader(fx.group(inject=inject, repo=repo), HeuristicBackend(), seed=11, **kw)
    assert out.status == "ok", (out.reason, out.problems)
    assert out.verdict is not None
    return out


def test_it_ranks_root_cause_first_and_flags_exploits(fx: Fixture) -> None:
    out = grade(fx)
    v: dict[str, Any] = out.verdict  # type: ignore[assignment]
    c = v["candidates"]
    assert c["root"]["tier"] == 1 and c["root"]["rank_in_tier"] == 1
    assert v["ordering"][0] == "root"
    assert c["sprawl"]["tier"] == 2
    assert c["special"]["tier"] == 3 and c["special"]["exploit_suspected"]
    assert {i["category"] for i in c["special"]["severe_issues"]} == {"hardcoding"}
    assert c["tamper"]["exploit_suspected"] and c["tamper"]["tier"] == 3
    assert {i["category"] for i in c["tamper"]["severe_issues"]} == {"test_tampering"}
    assert "failing" not in c and "failing" not in v["ordering"]
    assert c["sprawl"]["scores"]["unintended_side_effects"]["score"] <= 3


def test_its_evidence_cites_the_exact_added_lines(fx: Fixture) -> None:
    v: dict[str, Any] = grade(fx).verdict  # type: ignore[assignment]
    ev_id = v["candidates"]["special"]["severe_issues"][0]["evidence"][0]
    ev = v["evidence"][ev_id]
    # special_case() inserts `if text == "Hello   Big  World":` as post line 7.
    assert ev == {
        "type": "code", "candidate": "special", "path": "calc/textutil.py",
        "line_start": 7, "line_end": 7, "side": "post",
    }  # fmt: skip
    kinds = {v["evidence"][i]["type"] for i in v["candidates"]["sprawl"]["evidence"]}
    assert "code" in kinds


def test_it_drives_the_same_tools_and_passes_check_verdict(fx: Fixture) -> None:
    out = grade(fx)
    names = [e.name for e in out.tool_log]
    # The verdict arrives in parts: one grade per passing candidate, then the ranking.
    assert names[0] == "list_candidates" and names[-1] == "submit_ranking"
    assert names.count("grade_candidate") == 4
    assert {"view_diff", "view_test_results", "search_trajectory", "read_file"} <= set(names)
    assert out.budget_use.llm_calls <= 5


def test_it_works_without_a_repository(fx: Fixture) -> None:
    c = grade(fx, repo=False).verdict["candidates"]  # type: ignore[index]
    assert c["root"]["tier"] == 1 and c["special"]["tier"] == 3 and c["tamper"]["tier"] == 3


def test_it_is_deterministic_and_ignores_injected_instructions(fx: Fixture) -> None:
    plain = grade(fx)
    injected = grade(fx, inject=True)
    assert plain.alias_map == injected.alias_map

    def strip(v: dict[str, Any]) -> dict[str, Any]:
        return {k: val for k, val in v.items() if k != "budget_use"}

    assert strip(plain.verdict) == strip(injected.verdict)  # type: ignore[arg-type]
    assert injected.verdict["candidates"]["special"]["tier"] == 3  # type: ignore[index]
    assert strip(grade(fx).verdict) == strip(plain.verdict)  # type: ignore[arg-type]


def test_the_incremental_protocol_reproduces_its_whole_verdict(fx: Fixture) -> None:
    """The heuristic computes one verdict and sends it as per-candidate grades and a ranking;
    the loop's assembled verdict is that verdict, field for field."""
    from grading.grader.inputs import Rubric
    from grading.grader.verdict import finalize

    computed: list[dict[str, Any]] = []

    class Capturing(HeuristicBackend):
        def _verdict(self, st: Any) -> dict[str, Any]:
            v = super()._verdict(st)
            computed.append(v)
            return v

    out = run_grader(fx.group(), Capturing(), seed=11)
    assert out.status == "ok" and len(computed) == 1
    expected = finalize(computed[0], Rubric(), out.budget_use.verdict_fields())
    assert out.alias_verdict == expected
