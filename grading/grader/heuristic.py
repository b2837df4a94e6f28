"""The offline heuristic grader: a Backend that needs no model (method §5).

It drives the same tools as a model would — list candidates, read each diff, test results and
trajectory errors — then submits a verdict from `heuristic_rules`. Its verdict goes through
`check_verdict` like any other. It only ever extracts numbers, paths and literals from tool
output, so instructions planted in untrusted content cannot steer it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from grading.diffs import parse_patch
from grading.grader.backends.base import CallOptions, Completion, Message, ToolCall, ToolSpec
from grading.grader.conversation import (
    CANDIDATE_LINE,
    NEXT_DIFF_PAGE,
    blocks,
    diff_text,
    read_conversation,
    trusted,
)
from grading.grader.heuristic_rules import Features, extract, literals, score_group
from grading.grader.inputs import Rubric
from grading.grader.protocol import verdict_to_turns

_EVENT = re.compile(r"^#(\d+) \[([\w.-]+)( error)?\]")


@dataclass
class _State:
    """What the conversation so far tells the heuristic (rebuilt on every call)."""

    calls: dict[str, tuple[str, dict[str, Any]]] = field(default_factory=dict)  # id -> (name, args)
    results: list[tuple[str, dict[str, Any], str]] = field(default_factory=list)
    user_text: str = ""
    final: bool = False
    has_repo: bool = False


def _read(messages: Sequence[Message], memory: dict[str, str], final: bool) -> _State:
    conv = read_conversation(messages, memory)
    return _State(conv.calls, conv.results, conv.user_text, final, conv.has_repo)


class HeuristicBackend:
    name = "heuristic"
    model = "heuristic-v1"

    def __init__(self, rubric: Rubric | None = None) -> None:
        self.rubric = rubric or Rubric()
        self._n = 0
        self._memory: dict[str, str] = {}

    def complete(
        self,
        messages: Sequence[Message],
        tools: Sequence[ToolSpec],
        *,
        max_output_tokens: int,
        temperature: float,
        seed: int | None,
        options: CallOptions = CallOptions(),  # noqa: B008 (frozen, never mutated)
    ) -> Completion:
        st = _read(messages, self._memory, final=options.tool_choice != "auto")
        calls = [] if st.final else self._next_calls(st)[: options.max_tool_calls or None]
        if not calls:
            # The whole verdict at once, as the protocol's per-candidate calls and the ranking.
            (calls,) = verdict_to_turns(self._verdict(st), per_turn=10_000)
        tool_calls = []
        for name, args in calls:
            self._n += 1
            tool_calls.append(ToolCall(id=f"h{self._n}", name=name, arguments=args))
        return Completion(Message("assistant", "", tuple(tool_calls)), 0, 0, 0.0, "tool_use")

    def _next_calls(self, st: _State) -> list[tuple[str, dict[str, Any]]]:
        done = {(n, tuple(sorted(a.items()))) for n, a in st.calls.values()}
        listing = next((c for n, _, c in st.results if n == "list_candidates"), None)
        if listing is None:
            return [] if ("list_candidates", ()) in done else [("list_candidates", {})]
        todo: list[tuple[str, dict[str, Any]]] = []
        for alias, _, _ in CANDIDATE_LINE.findall(trusted(listing)):
            todo += [
                ("view_diff", {"candidate": alias}),
                ("view_test_results", {"candidate": alias}),
                ("search_trajectory", {"candidate": alias, "query": "error", "max_results": 100}),
            ]
        for name, args, content in st.results:
            m = NEXT_DIFF_PAGE.search(trusted(content)) if name == "view_diff" else None
            if m:
                todo.append(
                    ("view_diff", {"candidate": args["candidate"], "start": int(m.group(1))})
                )
        if "view_reference_patch" in trusted(st.user_text):
            todo.append(("view_reference_patch", {}))
        for name, _, content in st.results:
            m = NEXT_DIFF_PAGE.search(trusted(content)) if name == "view_reference_patch" else None
            if m:
                todo.append(("view_reference_patch", {"start": int(m.group(1))}))
        if st.has_repo:
            todo += [
                ("read_file", {"tree": "base", "path": p})
                for p in sorted(_test_files(st.user_text))
            ]
        return [(n, a) for n, a in todo if (n, tuple(sorted(a.items()))) not in done]

    def _verdict(self, st: _State) -> dict[str, Any]:
        listing = next((c for n, _, c in st.results if n == "list_candidates"), "")
        test_text = "\n".join(
            blocks(st.user_text, "test patch") + blocks(st.user_text, "FAIL_TO_PASS")
        )
        test_text += "\n".join(b for n, _, c in st.results if n == "read_file" for b in blocks(c))
        test_lits = literals(test_text) | {
            part
            for t in blocks(st.user_text, "FAIL_TO_PASS")
            for part in re.findall(r"\[([^\]]+)\]", t)
        }
        feats: dict[str, Features] = {}
        for alias, status, events in CANDIDATE_LINE.findall(trusted(listing)):
            pages = [
                c for n, a, c in st.results if n == "view_diff" and a.get("candidate") == alias
            ]
            errors = {
                int(m.group(1))
                for n, a, c in st.results
                if n == "search_trajectory" and a.get("candidate") == alias
                for b in blocks(c)
                for m in map(_EVENT.match, b.split("\n"))
                if m and (m.group(3) or m.group(2).lower() == "error")
            }
            feats[alias] = extract(
                alias,
                status == "passed",
                parse_patch(diff_text(pages)),
                events=int(events),
                error_events=errors,
                test_literals=test_lits,
                test_paths=_test_files(st.user_text),
            )
        # The maintainers' fix says which files the problem lives in: a candidate touching
        # them is not spreading beyond the task, whatever the other candidates did.
        reference = [c for n, _, c in st.results if n == "view_reference_patch"]
        reference_files = frozenset(parse_patch(diff_text(reference)).paths) if reference else None
        return score_group(feats, self.rubric, reference_files=reference_files)


def _test_files(user_text: str) -> set[str]:
    """Files of the FAIL_TO_PASS / PASS_TO_PASS tests and of the test patch."""
    paths = set()
    for src in ("FAIL_TO_PASS", "PASS_TO_PASS"):
        for block in blocks(user_text, src):
            for test_id in block.split("\n"):
                path = test_id.split("::", 1)[0].strip()
                if path.endswith(".py"):
                    paths.add(path)
    for block in blocks(user_text, "test patch"):
        paths |= {f.new_path for f in parse_patch(block) if f.new_path}
    return {p for p in paths if p and ".." not in p and not p.startswith("/")}
