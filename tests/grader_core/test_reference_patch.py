"""The task's reference solution (the maintainers' fix) is the grader's reference material:
a labelled tool, an input of the offline grader, never a candidate."""

from dataclasses import replace
from typing import Any

from grading.grader import prompts
from grading.grader import tool_output as render
from grading.grader.heuristic import HeuristicBackend
from grading.grader.inputs import Budget, GroupInput
from grading.grader.loop import run_grader
from grading.grader.tools import Toolbox, assign_aliases
from tests.grader_core.fixtures import Fixture, root_cause


def with_reference(group: GroupInput, patch: str) -> GroupInput:
    return GroupInput(replace(group.task, reference_patch=patch), group.candidates)


def test_view_reference_patch_shows_the_fix_labelled_as_reference(fx: Fixture) -> None:
    reference = fx.patch({"calc/textutil.py": root_cause("the maintainers' fix")})
    group = with_reference(fx.group(repo=False), reference)
    box = Toolbox(group, assign_aliases(group.candidates, seed=3))
    out = box.call("view_reference_patch", {})
    assert not out.is_error
    assert out.content.startswith("reference solution: the maintainers' fix for this task.")
    assert "not a candidate" in out.content.split("\n", 1)[0]
    assert f'<untrusted source="{render.REFERENCE_SOURCE}">' in out.content
    assert "+    # the maintainers' fix" in out.content
    # It is not one of the candidates.
    listing = box.call("list_candidates", {}).content
    assert listing.count(": passed,") + listing.count(": failed,") == len(group.candidates)


def test_without_a_reference_the_tool_says_so_and_the_prompt_does_not_offer_it(
    fx: Fixture,
) -> None:
    group = fx.group(repo=False)
    box = Toolbox(group, assign_aliases(group.candidates, seed=3))
    assert box.call("view_reference_patch", {}).content == "This task has no reference solution."
    passing = {a: c.passed for a, c in box.candidates.items()}
    assert "view_reference_patch" not in prompts.user_prompt(group, passing, Budget(), False)
    offered = prompts.user_prompt(with_reference(group, "diff"), passing, Budget(), False)
    assert "view_reference_patch" in offered and "not a candidate" in offered


def lone_sprawl(fx: Fixture) -> GroupInput:
    """Only the sprawling candidate passes: no consensus to compare it with."""
    group = fx.group(repo=False)
    cands = [replace(c, passed=c.key == "sprawl") for c in group.candidates]
    return GroupInput(group.task, cands)


def grade(group: GroupInput) -> tuple[dict[str, Any], list[str]]:
    out = run_grader(group, HeuristicBackend(), seed=5, budget=Budget(max_steps=60))
    assert out.status == "ok", (out.reason, out.problems)
    assert out.verdict is not None
    return out.verdict, [e.name for e in out.tool_log]


def test_the_offline_grader_judges_spread_against_the_reference(fx: Fixture) -> None:
    group = lone_sprawl(fx)
    alone, names = grade(group)
    assert "view_reference_patch" not in names
    reference = fx.patch({"calc/textutil.py": root_cause()})
    judged, names = grade(with_reference(group, reference))
    assert "view_reference_patch" in names
    before = alone["candidates"]["sprawl"]["scores"]["unintended_side_effects"]
    after = judged["candidates"]["sprawl"]["scores"]["unintended_side_effects"]
    # With nothing to compare against, the extra files went unnoticed; the reference touches
    # only calc/textutil.py, so calc/helpers.py and calc/__init__.py are outside it.
    assert before["score"] == 5
    assert after["score"] <= 2
    assert "neither the reference solution" in after["rationale"]
    assert "calc/helpers.py" in after["rationale"]


def test_files_the_reference_touches_are_never_outside(fx: Fixture) -> None:
    reference = fx.patch(
        {"calc/textutil.py": root_cause(), "calc/helpers.py": "def helper_0(v):\n    return v\n"}
    )
    judged, _ = grade(with_reference(lone_sprawl(fx), reference))
    rationale = judged["candidates"]["sprawl"]["scores"]["unintended_side_effects"]["rationale"]
    assert "calc/__init__.py" in rationale and "calc/helpers.py" not in rationale
