"""A scripted grader agent that plays a model behind the fake provider servers.

It reads the conversation the way a model would (only what the server received), explores every
candidate (diff pages, test output, trajectory pages; with `compare`, each candidate against the
next one with compare_candidates, two pages each), then sends a known-good verdict in the
incremental protocol, a few grades per turn. The first grade it sends is far too long, so the
server cuts it at the output limit: the loop must notice and the agent then sends it again in a
normal size. Calls answered "not run", "not a JSON object" or "cut" are simply sent again.
"""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from grading.grader.protocol import GRADE, RANK, verdict_to_turns

_ALIAS = re.compile(r"^([A-Z]{1,2}): (?:passed|failed)", re.M)
_ACCEPTED = re.compile(r"^grade of ([A-Z]{1,2}) accepted")
_NEXT_DIFF = re.compile(r"call again with start=(\d+)\]")
_NEXT_EVENT = re.compile(r"\[continue at event (\d+):")
RETRY_PREFIXES = ("not run", "not shown", "error: the arguments", "error: your", "error: not run")


@dataclass
class Neutral:
    """One message as every personality hands it to the agent."""

    role: str
    content: str = ""
    calls: list[tuple[str, str, str]] = field(default_factory=list)  # (id, name, args text)
    call_id: str = ""


@dataclass
class Turn:
    text: str
    calls: list[tuple[str, str]]  # (name, arguments JSON text)


def _key(name: str, args: str) -> tuple[str, str]:
    try:
        return name, json.dumps(json.loads(args), sort_keys=True)
    except ValueError:
        return name, args


@dataclass
class ScriptedAgent:
    verdict: Mapping[str, Any]  # by alias, as the grader should end up with
    per_turn: int = 4
    diff_pages: int = 2
    trajectory_pages: int = 2
    compare: bool = False
    pad_first_grade_tokens: int = 12_000
    padded: bool = False
    turns: int = 0
    aliases: list[str] = field(default_factory=list)

    def next_turn(self, messages: Sequence[Neutral]) -> Turn:
        self.turns += 1
        answers = {m.call_id: m.content for m in messages if m.role == "tool"}
        made = [(cid, name, args) for m in messages for cid, name, args in m.calls]
        done = {
            _key(name, args)
            for cid, name, args in made
            if not answers.get(cid, "").startswith(RETRY_PREFIXES)
        }
        notes = [m.content for m in messages if m.role == "user"]
        # A sensible model starts grading when warned, not only when forced.
        final = bool(notes) and ("FINAL PHASE" in notes[-1] or "WARNING" in notes[-1])
        listings = [answers.get(c, "") for c, n, _ in made if n == "list_candidates"]
        listing = next((a for a in reversed(listings) if _ALIAS.search(a)), "")
        # A model keeps the candidate list in mind (it writes it into its own reasoning) even
        # after the tool result was compacted away.
        self.aliases = self.aliases or _ALIAS.findall(listing)
        if not self.aliases:
            return Turn("Let me see the candidates.", [("list_candidates", "{}")])
        todo = [c for c in self._plan(self.aliases, made, answers) if _key(*c) not in done]
        if todo and not final:
            return Turn("Reading more.", todo[: self.per_turn])
        accepted = {m.group(1) for a in answers.values() if (m := _ACCEPTED.match(a))}
        grades, rank = self._submission()
        pending = [(n, a) for n, a in grades if json.loads(a)["candidate"] not in accepted]
        if pending:
            batch = pending[: self.per_turn]
            if not self.padded:
                self.padded = True
                batch[0] = (batch[0][0], self._padded(batch[0][1]))
            return Turn("Grading.", batch)
        return Turn("Ranking.", [rank])

    def _plan(
        self, aliases: list[str], made: list[tuple[str, str, str]], answers: Mapping[str, str]
    ) -> list[tuple[str, str]]:
        plan: list[tuple[str, str]] = []
        for a in aliases:
            plan += [
                ("view_diff", json.dumps({"candidate": a})),
                ("view_test_results", json.dumps({"candidate": a})),
                ("view_trajectory", json.dumps({"candidate": a, "start": 0, "count": 50})),
            ]
        if self.compare:
            plan += [
                ("compare_candidates", json.dumps({"a": a, "b": b}))
                for a, b in itertools.pairwise(aliases)
            ]
        for cid, name, args in made:
            body = answers.get(cid, "")
            try:
                parsed = json.loads(args)
            except ValueError:
                continue
            a = parsed.get("candidate")
            first_page = int(parsed.get("start", 1 if name == "view_diff" else 0)) in (0, 1)
            more_compare = name == "compare_candidates" and _NEXT_DIFF.search(body)
            if first_page and more_compare:
                nxt = {**parsed, "start": int(more_compare.group(1))}
                plan.append((name, json.dumps(nxt)))
            more_diff = name == "view_diff" and self.diff_pages > 1 and _NEXT_DIFF.search(body)
            if first_page and more_diff:
                plan.append((name, json.dumps({"candidate": a, "start": int(more_diff.group(1))})))
            more = (
                name == "view_trajectory" and self.trajectory_pages > 1 and _NEXT_EVENT.search(body)
            )
            if first_page and more:
                nxt = {"candidate": a, "start": int(more.group(1)), "count": 50}
                plan.append((name, json.dumps(nxt)))
        return plan

    def _submission(self) -> tuple[list[tuple[str, str]], tuple[str, str]]:
        calls = [c for turn in verdict_to_turns(self.verdict, per_turn=100) for c in turn]
        grades = [(n, json.dumps(a)) for n, a in calls if n == GRADE]
        rank = next((n, json.dumps(a)) for n, a in calls if n == RANK)
        return grades, rank

    def _padded(self, args: str) -> str:
        data = json.loads(args)
        first = next(iter(data["scores"].values()))
        first["rationale"] += " in detail:" + " the change" * self.pad_first_grade_tokens
        return json.dumps(data)
