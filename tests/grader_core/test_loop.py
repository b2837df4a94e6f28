import re
from collections.abc import Sequence
from typing import Any

import pytest

from grading.grader import prompts
from grading.grader.backends.base import Message, PermanentBackendError, TransientBackendError
from grading.grader.inputs import CRITERIA, Budget
from grading.grader.loop import LogRecord, run_grader
from tests.grader_core.fixtures import INJECTION, Fixture, Scripted, SubprocessSandbox, call


def passing_aliases(messages: Sequence[Message]) -> list[str]:
    listing = next(m.content for m in messages if m.role == "tool" and m.name == "list_candidates")
    return re.findall(r"^([A-Z]): passed", listing, re.MULTILINE)


def all_t1(
    messages: Sequence[Message], *, extra_evidence: dict[str, Any] | None = None
) -> dict[str, Any]:
    aliases = passing_aliases(messages)
    cand = {
        "scores": {c: {"score": 5, "rationale": "fine"} for c in CRITERIA},
        "severe_issues": [],
        "exploit_suspected": False,
        "tier": 1,
        "rank_in_tier": 1,
        "summary": "ok",
    }
    return {
        "candidates": {a: cand for a in aliases},
        "ordering": aliases,
        "ties": [aliases],
        "evidence": extra_evidence or {},
        "confidence": 0.4,
    }


def submit(verdict_fn: Any) -> Any:
    return lambda messages: call("submit_verdict", {"verdict": verdict_fn(messages)}, cid="s")


def test_a_scripted_conversation_yields_an_ok_verdict(fx: Fixture) -> None:
    events: list[LogRecord] = []

    def checked(messages: Sequence[Message]) -> dict[str, Any]:
        ev = {"X1": {"type": "execution", "candidate": "base", "command": "exit 4", "exit_code": 4}}
        return all_t1(messages, extra_evidence=ev)

    backend = Scripted([
        call("list_candidates", {}),
        call("read_file", None, raw="{not json"),
        call("run_check", {"tree": "base", "command": "exit 4"}),
        submit(checked),
    ])  # fmt: skip
    out = run_grader(
        fx.group(), backend, sandbox=SubprocessSandbox(), seed=3, on_event=events.append
    )
    assert out.status == "ok", out.problems
    assert out.verdict is not None and out.alias_verdict is not None
    assert sorted(out.verdict["ordering"]) == ["root", "special", "sprawl", "tamper"]
    assert set(out.alias_map.values()) == {"root", "sprawl", "special", "tamper", "failing"}
    assert out.verdict["budget_use"]["llm_calls"] == 4
    malformed = backend.seen[2][-1]
    assert malformed.role == "tool" and "not a JSON object" in malformed.content
    assert [r.kind for r in events] == ["llm_call", "tool_call"] * 4
    assert events[0].data["messages_in"][0]["role"] == "system"
    assert out.budget_use.input_tokens == 400


def test_an_invalid_verdict_is_re_asked_then_the_run_fails(fx: Fixture) -> None:
    def bad(messages: Sequence[Message]) -> dict[str, Any]:
        v = all_t1(messages)
        v["ordering"] = v["ordering"][:1]
        return v

    backend = Scripted([call("list_candidates", {}), submit(bad)])
    out = run_grader(fx.group(repo=False), backend, max_reasks=2)
    assert out.status == "failed" and "invalid verdict" in out.reason
    assert len(backend.seen) == 4  # list + the first submission + two re-asks
    reask = backend.seen[2][-1]
    assert "rejected" in reask.content and "[ordering]" in reask.content
    assert "1 attempt(s) left" in backend.seen[3][-1].content
    assert {p.code for p in out.problems} == {"ordering"}


def test_budget_exhaustion_asks_once_to_submit(fx: Fixture) -> None:
    backend = Scripted([call("list_candidates", {})])
    out = run_grader(fx.group(repo=False), backend, budget=Budget(max_steps=2), max_reasks=1)
    assert out.status == "failed" and "budget" in out.reason
    last = backend.seen[-1]
    assert sum(m.content == prompts.BUDGET_EXHAUSTED for m in last) == 1
    assert backend.tools_seen[:2] == [backend.tools_seen[0]] * 2 and len(backend.tools_seen[0]) > 1
    assert backend.tools_seen[2:] == [["submit_verdict"], ["submit_verdict"]]
    assert "only submit_verdict" in last[-1].content


def test_budget_exhaustion_then_a_valid_submission_is_ok(fx: Fixture) -> None:
    backend = Scripted([call("list_candidates", {}), call("list_candidates", {}), submit(all_t1)])
    out = run_grader(fx.group(repo=False), backend, budget=Budget(max_steps=2))
    assert out.status == "ok"


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
        from grading.grader.backends.base import ToolCall

        aliases = re.findall(
            r"^([A-Z]): ", next(m.content for m in messages if m.name == "list_candidates"), re.M
        )
        calls = [ToolCall(f"d{a}", "view_diff", {"candidate": a}) for a in aliases]
        calls += [ToolCall(f"t{a}", "view_trajectory", {"candidate": a}) for a in aliases]
        calls += [ToolCall(f"g{a}", "grep", {"tree": a, "pattern": "IGNORE"}) for a in aliases]
        return Message("assistant", "", tuple(calls))

    backend = Scripted([call("list_candidates", {}), look_everywhere, submit(all_t1)])
    out = run_grader(fx.group(inject=True), backend)
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
