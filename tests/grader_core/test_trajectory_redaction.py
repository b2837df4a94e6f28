"""The grader reads trajectories through the shared redactor: the agent's own system prompt,
signatures and names never reach the model (the run goes through the real loop and toolbox)."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence

from grading.grader.backends.base import Message, ToolCall
from grading.grader.inputs import CandidateInput
from grading.grader.loop import run_grader
from grading.grader.protocol import GRADE, RANK
from tests.grader_core.fixtures import Fixture, Scripted
from tests.grader_core.test_loop import grade_args, passing_aliases, ranking

EVENTS = [
    {
        "type": "system",
        "content": "You are claude-3-5-sonnet-20240620, a large language model trained by "
        "Anthropic, running inside zephyr-harness.",
    },
    {"type": "thought", "content": "As Zephyrix-9B, I'll read the code first."},
    {"type": "action", "content": "aider --model gpt-4o-2024-05-13 --yes", "tool": "bash"},
    {
        "type": "observation",
        "content": "wrote CLAUDE.md; Co-authored-by: Claude <noreply@anthropic.com>",
    },
    {"type": "observation", "content": "ordinary output: 2 passed", "zephyr-harness": "key"},
]
MARKS = ["claude", "anthropic", "zephyr", "gpt-4o", "aider", "noreply"]


def _views(messages: Sequence[Message]) -> Message:
    aliases = passing_aliases(messages)
    calls = [ToolCall(f"v{a}", "view_trajectory", {"candidate": a}) for a in aliases]
    calls += [
        ToolCall(f"s{a}{q}", "search_trajectory", {"candidate": a, "query": q})
        for a in aliases
        for q in ("claude", "ordinary")
    ]
    return Message("assistant", "", tuple(calls))


def _submit(messages: Sequence[Message]) -> Message:
    aliases = passing_aliases(messages)
    calls = [ToolCall(f"g{a}", GRADE, grade_args(a)) for a in aliases]
    calls.append(ToolCall("r", RANK, ranking(aliases)))
    return Message("assistant", "", tuple(calls))


def test_the_grader_never_sees_the_agents_identity_in_a_trajectory(fx: Fixture) -> None:
    group = fx.group(repo=False)
    group = dataclasses.replace(
        group,
        candidates=[
            dataclasses.replace(c, trajectory=EVENTS, num_events=None) for c in group.candidates
        ],
        identity_names=["zephyr-harness", "Zephyrix-9B"],
    )
    assert all(isinstance(c, CandidateInput) for c in group.candidates)
    backend = Scripted([_views, _submit])
    out = run_grader(group, backend, seed=5)
    assert out.status == "ok", out.problems
    sent = "\n".join(m.content for conversation in backend.seen for m in conversation)
    assert "ordinary output: 2 passed" in sent  # the trajectory was shown
    assert "agent-file-1" in sent and "[redacted]" in sent
    assert [mark for mark in MARKS if re.search(mark, sent, re.IGNORECASE)] == []
