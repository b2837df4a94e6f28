"""`compare_candidates` through the real loop: a scripted agent behind the fake OpenAI server
compares each candidate with the next, follows the tool's paging, and still grades the group."""

from __future__ import annotations

import re
from dataclasses import replace

from grading.diffs import compare_patches, parse_patch
from grading.grader import tool_output
from grading.grader.backends.openai_compat import OpenAICompatBackend
from grading.grader.context import ContextWindow
from grading.grader.heuristic import HeuristicBackend
from grading.grader.inputs import Budget, GroupInput
from grading.grader.loop import LogRecord, run_grader
from tests.grader.fakes.agent import ScriptedAgent
from tests.grader.fakes.llm_server import FakeLLMServer
from tests.grader.fakes.paper_group import paper_group
from tests.grader.fakes.personalities import openai_reasoning

SEED = 5
_ROWS = re.compile(r"rows (\d+)-(\d+) of (\d+)")


def _group() -> GroupInput:
    """Four candidates; the last repeats the third's patch and adds one file, so one pair
    shares most of its changes and the others share none."""
    group = paper_group(seed=2, size=4, failing=1)
    third = group.candidates[2]
    extra = "diff --git a/src/extra.py b/src/extra.py\n--- a/src/extra.py\n+++ b/src/extra.py\n"
    extra += "@@ -1,2 +1,3 @@\n a = 1\n+b = 2\n c = 3\n"
    last = replace(group.candidates[3], patch=third.patch + extra)
    return replace(group, candidates=[*group.candidates[:3], last])


def test_a_model_compares_candidates_page_by_page_and_grades(sleeps) -> None:  # type: ignore[no-untyped-def]
    group = _group()
    base = run_grader(group, HeuristicBackend(), seed=SEED)
    assert base.status == "ok", base.reason
    expected = {k: v for k, v in base.alias_verdict.items() if k != "budget_use"}

    provider = openai_reasoning(ScriptedAgent(expected, compare=True), context_limit=128_000)
    server = FakeLLMServer(handler=provider).start()
    try:
        backend = OpenAICompatBackend(
            f"{server.url}/v1", "sk-test", "o-fake", reasoning=True, sleep=sleeps
        )
        window = ContextWindow(128_000, 64_000, "the test")
        events: list[LogRecord] = []
        out = run_grader(
            group, backend, seed=SEED, on_event=events.append, context_window=window,
            budget=Budget(max_input_tokens=3_000_000, max_output_tokens=200_000),
        )  # fmt: skip
    finally:
        server.stop()
    assert out.status == "ok", (out.reason, out.problems)
    assert {k: v for k, v in out.alias_verdict.items() if k != "budget_use"} == expected

    calls = [e for e in out.tool_log if e.name == "compare_candidates"]
    firsts = [e for e in calls if "start" not in e.arguments]
    assert len(firsts) == 3 and not any(e.is_error for e in calls)
    by_key = {c.key: c for c in group.candidates}
    paged = 0
    for first in firsts:
        a, b = first.arguments["a"], first.arguments["b"]
        pa, pb = (parse_patch(by_key[out.alias_map[x]].patch) for x in (a, b))
        rows = tool_output.comparison_rows(compare_patches(pa, pb), a, b)
        lo, hi, total = map(int, _ROWS.search(first.output).groups())  # type: ignore[union-attr]
        assert (lo, total) == (1, len(rows))
        nexts = [e for e in calls if e.arguments == {"a": a, "b": b, "start": hi + 1}]
        if hi == total:
            assert not nexts
            continue
        # The agent asks for a next page only on the tool's "call again with start=N]" hint
        # (the log keeps the first 4,000 characters, not the hint): it starts where this stopped.
        (second,) = nexts
        assert _ROWS.search(second.output).group(1) == str(hi + 1)  # type: ignore[union-attr]
        assert rows[hi][1][:60] in second.output
        paged += 1
    assert paged >= 2  # paper-size pairs that share nothing do not fit one page
    # The pair with the repeated patch: everything but the added file is the same change.
    twins = {out.alias_map[a]: a for a in out.alias_map}
    t2, t3 = twins[group.candidates[2].key], twins[group.candidates[3].key]
    pair = [e for e in firsts if {e.arguments["a"], e.arguments["b"]} == {t2, t3}]
    (twin,) = pair  # adjacent in this seed's alias order
    assert "the same change in both" in twin.output and "src/extra.py: only" in twin.output


def test_the_paper_group_patches_are_well_formed() -> None:
    """Its docstring promises diffs unidiff reads; one hunk header once overstated its counts,
    which the grader's old unidiff index answered with no files at all for that candidate."""
    import unidiff

    for cand in paper_group(seed=0).candidates:
        assert parse_patch(cand.patch).problems == (), cand.key
        assert len(unidiff.PatchSet(cand.patch)) == len(parse_patch(cand.patch).files)
