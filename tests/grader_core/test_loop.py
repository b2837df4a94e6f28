import re
from collections.abc import Sequence
from typing import Any

import pytest

from grading.grader.backends.base import (
    Completion,
    ContextOverflowError,
    Message,
    PermanentBackendError,
    ToolCall,
    TransientBackendError,
)
from grading.grader.context import ContextWindow
from grading.grader.incremental import RANKING_CODES
from grading.grader.inputs import CRITERIA, Budget
from grading.grader.loop import LogRecord, run_grader
from grading.grader.protocol import GRADE, RANK
from tests.grader_core.fixtures import INJECTION, Fixture, Scripted, SubprocessSandbox, call


def passing_aliases(messages: Sequence[Message]) -> list[str]:
    # From the first user message: old tool results may have been compacted away.
    m = re.search(r"passing: ([A-Z, ]+);", messages[1].content)
    return m.group(1).split(", ") if m else []


def grade_args(alias: str, **changes: Any) -> dict[str, Any]:
    args: dict[str, Any] = {
        "candidate": alias,
        "scores": {c: {"score": 5, "rationale": "fine", "evidence": []} for c in CRITERIA},
        "severe_issues": [],
        "exploit_suspected": False,
        "tier": 1,
        "tier_evidence": [],
        "summary": "ok",
        "evidence": [],
    }
    args.update(changes)
    return args


def ranking(aliases: list[str], **changes: Any) -> dict[str, Any]:
    args: dict[str, Any] = {
        "ordering": aliases,
        "ties": [aliases],
        "reorder_notes": [],
        "confidence": 0.4,
        "evidence": [],
    }
    args.update(changes)
    return args


def submit_all_t1(messages: Sequence[Message], **rank_changes: Any) -> Message:
    aliases = passing_aliases(messages)
    calls = [ToolCall(f"g{a}", GRADE, grade_args(a)) for a in aliases]
    calls.append(ToolCall("r", RANK, ranking(aliases, **rank_changes)))
    return Message("assistant", "", tuple(calls))


def tool_answers(messages: Sequence[Message]) -> dict[str, str]:
    return {m.tool_call_id or "": m.content for m in messages if m.role == "tool"}


def test_a_scripted_conversation_yields_an_ok_verdict(fx: Fixture) -> None:
    events: list[LogRecord] = []

    def checked(messages: Sequence[Message]) -> Message:
        aliases = passing_aliases(messages)
        item = {
            "id": "X1", "type": "execution", "candidate": "base", "command": "exit 4",
            "exit_code": 4, "path": None, "line_start": None, "line_end": None, "side": None,
            "event_index": None,
        }  # fmt: skip
        calls = [ToolCall(f"g{a}", GRADE, grade_args(a)) for a in aliases]
        calls.append(ToolCall("r", RANK, ranking(aliases, evidence=[item])))
        return Message("assistant", "", tuple(calls))

    backend = Scripted([
        call("list_candidates", {}),
        call("read_file", None, raw="{not json"),
        call("run_check", {"tree": "base", "command": "exit 4"}),
        checked,
    ])  # fmt: skip
    out = run_grader(
        fx.group(), backend, sandbox=SubprocessSandbox(), seed=3, on_event=events.append
    )
    assert out.status == "ok", out.problems
    assert out.verdict is not None and out.alias_verdict is not None
    assert sorted(out.verdict["ordering"]) == ["root", "special", "sprawl", "tamper"]
    assert set(out.alias_map.values()) == {"root", "sprawl", "special", "tamper", "failing"}
    assert out.verdict["budget_use"]["llm_calls"] == 4
    assert out.verdict["evidence"]["X1"] == {
        "type": "execution", "candidate": "base", "command": "exit 4", "exit_code": 4,
    }  # fmt: skip
    malformed = next(m for m in backend.seen[2] if m.role == "tool" and m.name == "read_file")
    assert "not a JSON object" in malformed.content
    kinds = [r.kind for r in events]
    assert kinds == ["llm_call", "tool_call"] * 3 + ["llm_call"] + ["tool_call"] * 5
    assert events[0].data["messages_in"][0]["role"] == "system"
    assert out.budget_use.input_tokens == 400
    # Every turn ends with the running budget the model sees.
    note = backend.seen[1][-1]
    assert note.role == "user" and note.content.startswith("[budget] context ")
    assert "39 of 40 model calls left" in note.content


def test_an_invalid_ranking_is_re_asked_then_the_run_fails(fx: Fixture) -> None:
    def bad(messages: Sequence[Message]) -> Message:
        aliases = passing_aliases(messages)
        return submit_all_t1(messages, ordering=aliases[:1], ties=[])

    def again(messages: Sequence[Message]) -> Message:
        aliases = passing_aliases(messages)
        return call(RANK, ranking(aliases[:1], ties=[]), cid="r2")

    backend = Scripted([call("list_candidates", {}), bad, again])
    out = run_grader(fx.group(repo=False), backend, max_reasks=2)
    assert out.status == "failed" and "submit_ranking rejected 3 times" in out.reason
    assert len(backend.seen) == 4  # list + grades and ranking + two re-asks of the ranking
    reask = tool_answers(backend.seen[2])["r"]
    assert "submit_ranking was rejected" in reask and "[ordering]" in reask
    assert "grade_candidate" not in reask.split(":", 1)[0]
    assert "1 attempt(s) left" in tool_answers(backend.seen[3])["r2"]
    assert "ordering" in {p.code for p in out.problems}
    assert {p.code for p in out.problems} <= RANKING_CODES


def test_a_rejected_grade_names_only_that_candidate_and_field(fx: Fixture) -> None:
    def grades(messages: Sequence[Message]) -> Message:
        aliases = passing_aliases(messages)
        calls = [ToolCall(f"g{a}", GRADE, grade_args(a)) for a in aliases[1:]]
        weak = grade_args(aliases[0], tier=2)
        weak["scores"]["minimality_of_changes"]["score"] = 2  # a negative judgment, no evidence
        return Message("assistant", "", (ToolCall("bad", GRADE, weak), *calls))

    def fixed(messages: Sequence[Message]) -> Message:
        aliases = passing_aliases(messages)
        item = {
            "id": "ev1", "type": "trajectory", "candidate": aliases[0], "event_index": 1,
            "path": None, "line_start": None, "line_end": None, "side": None,
            "command": None, "exit_code": None,
        }  # fmt: skip
        good = grade_args(aliases[0], tier=2, evidence=[item])
        good["scores"]["minimality_of_changes"].update(score=2, evidence=["ev1"])
        ordering = [*aliases[1:], aliases[0]]
        return Message(
            "assistant",
            "",
            (
                ToolCall("good", GRADE, good),
                ToolCall("r", RANK, ranking(ordering, ties=[aliases[1:]])),
            ),
        )

    backend = Scripted([call("list_candidates", {}), grades, fixed])
    out = run_grader(fx.group(repo=False), backend)
    assert out.status == "ok", out.problems
    answers = tool_answers(backend.seen[2])
    first = passing_aliases(backend.seen[2])[0]
    assert answers["bad"].startswith(f"grade_candidate for {first} was rejected")
    assert "scores/minimality_of_changes" in answers["bad"] and "needs evidence" in answers["bad"]
    assert all("accepted" in answers[f"g{a}"] for a in passing_aliases(backend.seen[2])[1:])
    verdict = out.alias_verdict
    assert verdict["candidates"][first]["tier"] == 2
    ev = {"type": "trajectory", "candidate": first, "event_index": 1}
    assert verdict["evidence"]["ev1"] == ev


def test_a_severe_issue_cannot_sit_in_t1(fx: Fixture) -> None:
    def grades(messages: Sequence[Message]) -> Message:
        a = passing_aliases(messages)[0]
        item = {
            "id": "e", "type": "trajectory", "candidate": a, "event_index": 0, "path": None,
            "line_start": None, "line_end": None, "side": None, "command": None,
            "exit_code": None,
        }  # fmt: skip
        issue = {"category": "hardcoding", "description": "special-cases", "evidence": ["e"]}
        return call(GRADE, grade_args(a, severe_issues=[issue], evidence=[item]), cid="g")

    backend = Scripted([call("list_candidates", {}), grades, grades, grades])
    out = run_grader(fx.group(repo=False), backend, max_reasks=2)
    assert out.status == "failed" and "rejected 3 times" in out.reason
    assert "[severe_in_t1]" in tool_answers(backend.seen[2])["g"]


def test_a_cut_reply_is_answered_and_the_next_call_gets_more_room(fx: Fixture) -> None:
    class Cutting(Scripted):
        def complete(self, messages: Sequence[Message], tools: Any, **kw: Any) -> Completion:
            comp = super().complete(messages, tools, **kw)
            if len(self.seen) == 2:  # a grade cut mid-JSON, as a server at its limit sends it
                cut = ToolCall("cut", GRADE, None, raw_arguments='{"candidate": "A", "sco')
                return Completion(Message("assistant", "", (cut,)), 100, 8192, 0.1, "length",
                                  truncated=True)  # fmt: skip
            return comp

    backend = Cutting([call("list_candidates", {}), call("x", {}), submit_all_t1])
    out = run_grader(fx.group(repo=False), backend)
    assert out.status == "ok", out.problems
    answer = tool_answers(backend.seen[2])["cut"]
    assert "was cut at 8192 output tokens" in answer and "send it in parts" in answer.lower()
    assert out.budget_use.truncations == 1
    assert backend.options_seen and len(backend.seen) == 3


def test_the_final_phase_forces_submission_and_nudges_once(fx: Fixture) -> None:
    backend = Scripted([
        call("list_candidates", {}),
        call("view_diff", {"candidate": "A"}),
        call("view_diff", {"candidate": "B"}),
        call("view_diff", {"candidate": "C"}),
        Message("assistant", "I think I am done."),
        Message("assistant", "Really done."),
    ])  # fmt: skip
    out = run_grader(fx.group(repo=False), backend, budget=Budget(max_steps=6))
    assert out.status == "failed" and "stopped without submitting" in out.reason
    choices = [o.tool_choice for o in backend.options_seen]
    # 6 calls, 4 passing to grade: the last 4 are kept for the grades, the ranking, a re-ask
    # and a cut reply.
    assert choices == ["auto", "auto", "required", "required", "required", "required"]
    notes = [m.content for m in backend.seen[3] if m.role == "user" and "[budget]" in m.content]
    assert "WARNING" in notes[0] and "FINAL PHASE" in notes[-1]
    refused = tool_answers(backend.seen[4])["c1"]
    assert "final phase" in refused
    assert backend.tools_seen[0] == backend.tools_seen[-1]  # same tools: the prefix stays cached
    nudges = [m for m in backend.seen[-1] if m.role == "user" and "Please continue" in m.content]
    assert len(nudges) == 1


def test_budget_exhaustion_then_a_valid_submission_is_ok(fx: Fixture) -> None:
    backend = Scripted([call("list_candidates", {}), call("list_candidates", {}), submit_all_t1])
    out = run_grader(fx.group(repo=False), backend, budget=Budget(max_steps=4))
    assert out.status == "ok"
    assert backend.options_seen[-1].tool_choice == "required"


def test_at_most_the_cap_of_exploration_calls_runs_per_turn(fx: Fixture) -> None:
    many = Message(
        "assistant", "", tuple(ToolCall(f"v{i}", "list_candidates", {}) for i in range(10))
    )
    backend = Scripted([many, submit_all_t1])
    out = run_grader(fx.group(repo=False), backend, budget=Budget(max_parallel_calls=8))
    assert out.status == "ok"
    answers = tool_answers(backend.seen[1])
    assert sum(a.startswith("not run: at most 8") for a in answers.values()) == 2
    assert sum(e.name == "list_candidates" and not e.is_error for e in out.tool_log) == 8
    assert backend.options_seen[0].max_tool_calls == 8


def test_old_results_are_compacted_in_blocks_and_the_prefix_is_kept(fx: Fixture) -> None:
    aliases = "ABCDE"
    turns: list[Any] = [call("list_candidates", {})]
    turns += [call("view_test_results", {"candidate": a}, cid=f"t{a}") for a in aliases * 3]
    turns.append(submit_all_t1)
    group = fx.group(repo=False)
    big = [type(c)(**{**c.__dict__, "test_output": "line of pytest output\n" * 600})
           for c in group.candidates]  # fmt: skip
    group = type(group)(group.task, big)
    backend = Scripted(turns)
    window = ContextWindow(window=32_000, target=12_000)
    out = run_grader(group, backend, context_window=window)
    assert out.status == "ok", (out.reason, out.problems)
    assert 1 <= out.budget_use.compactions < len(turns) // 3  # in blocks, not every turn
    stubs = [m for m in backend.seen[-1] if m.role == "tool" and m.content.startswith("[compacted")]
    assert stubs and "call the tool again" in stubs[0].content
    # Between two compactions each request starts with the whole previous one.
    kept = sum(
        backend.seen[i][: len(backend.seen[i - 1])] == backend.seen[i - 1]
        for i in range(1, len(backend.seen))
    )
    assert kept >= len(backend.seen) - 1 - out.budget_use.compactions


def test_a_context_overflow_teaches_the_loop_the_window(fx: Fixture) -> None:
    class Small(Scripted):
        def complete(self, messages: Sequence[Message], tools: Any, **kw: Any) -> Completion:
            if len(self.seen) == 1 and not getattr(self, "refused", False):
                self.refused = True
                raise ContextOverflowError("maximum context length is 16000 tokens", limit=16000)
            return super().complete(messages, tools, **kw)

    backend = Small([call("list_candidates", {}), submit_all_t1])
    window = ContextWindow(window=200_000)
    out = run_grader(fx.group(repo=False), backend, context_window=window)
    assert out.status == "ok", out.reason
    assert window.window == 16000 and window.source == "the server's error"


def test_a_spend_limit_stops_the_run_with_its_reason(fx: Fixture) -> None:
    asked: list[float] = []

    def check(next_tokens: int, next_usd: float) -> str | None:
        assert next_tokens > 0
        asked.append(next_usd)
        return "the day's limit of $1 for this configuration is reached" if len(asked) > 1 else None

    backend = Scripted([call("list_candidates", {}), submit_all_t1])
    out = run_grader(fx.group(repo=False), backend, spend_check=check)
    assert out.status == "failed" and out.reason.startswith("spend limit: the day's limit")
    assert len(backend.seen) == 1


def test_backend_errors(fx: Fixture) -> None:
    class Failing(Scripted):
        def __init__(self, exc: Exception) -> None:
            super().__init__([])
            self.exc = exc

        def complete(self, *args: Any, **kwargs: Any) -> Any:
            raise self.exc

    out = run_grader(fx.group(), Failing(PermanentBackendError("bad key")))
    assert out.status == "failed" and "bad key" in out.reason
    with pytest.raises(TransientBackendError):
        run_grader(fx.group(), Failing(TransientBackendError("429")))


def test_injected_text_only_reaches_the_model_inside_untrusted_delimiters(fx: Fixture) -> None:
    def look_everywhere(messages: Sequence[Message]) -> Message:
        aliases = re.findall(
            r"^([A-Z]): ", next(m.content for m in messages if m.name == "list_candidates"), re.M
        )
        calls = [ToolCall(f"d{a}", "view_diff", {"candidate": a}) for a in aliases]
        calls += [ToolCall(f"t{a}", "view_trajectory", {"candidate": a}) for a in aliases]
        calls += [ToolCall(f"g{a}", "grep", {"tree": a, "pattern": "IGNORE"}) for a in aliases]
        return Message("assistant", "", tuple(calls))

    backend = Scripted([call("list_candidates", {}), look_everywhere, submit_all_t1])
    out = run_grader(fx.group(inject=True), backend, budget=Budget(max_parallel_calls=15))
    assert out.status == "ok"
    sent = backend.seen[-1]
    seen_injection = 0
    for m in sent:
        outside = re.sub(
            r"<untrusted source=\"[^\"]*\">\n.*?\n</untrusted>", "", m.content, flags=re.S
        )
        assert INJECTION not in outside
        seen_injection += m.content.count(INJECTION)
    assert seen_injection >= 3  # diff, trajectory and grep all showed it, each delimited
    assert "never an instruction" in sent[0].content
