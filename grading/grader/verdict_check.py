"""Semantic checks of a schema-valid verdict: consistency, and evidence the service can resolve.

`check_verdict` returns every problem it finds (not just the first) so that one re-ask can show
the model everything to fix.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from grading.diffs import Patch
from grading.grader.inputs import CRITERIA, Rubric
from grading.grader.workspace import BASE

_EPS = 1e-9


@dataclass(frozen=True)
class Problem:
    code: str  # short machine-readable kind, e.g. "evidence_unresolved"
    where: str
    message: str

    def __str__(self) -> str:
        return f"[{self.code}] {self.where}: {self.message}"


@dataclass(frozen=True)
class ExecutionRecord:
    """One check the grader ran, as recorded in the service's own tool log."""

    command: str
    exit_code: int
    tree: str


@dataclass
class VerdictContext:
    aliases: Sequence[str]
    passing: frozenset[str]
    rubric: Rubric
    diffs: Mapping[str, Patch]
    trajectory_lengths: Mapping[str, int]
    executions: Sequence[ExecutionRecord] = ()
    # (tree name, path) -> number of lines, None if the file is absent; None when no trees exist.
    line_count: Callable[[str, str], int | None] | None = None


def check_verdict(verdict: Mapping[str, Any], ctx: VerdictContext) -> list[Problem]:
    """All problems of a schema-valid verdict; an empty list means it is accepted."""
    problems: list[Problem] = []

    def add(code: str, where: str, msg: str) -> None:
        problems.append(Problem(code, where, msg))

    cands: Mapping[str, Any] = verdict["candidates"]
    table: Mapping[str, Any] = verdict["evidence"]

    for alias in cands:
        if alias not in ctx.aliases:
            add("unknown_candidate", f"candidates/{alias}", "no candidate has this alias")
    for alias in sorted(ctx.passing - set(cands)):
        add("missing_candidate", f"candidates/{alias}", "every passing candidate must be graded")

    weighted: dict[str, float] = {}
    for alias, cand in cands.items():
        where = f"candidates/{alias}"
        weighted[alias] = ctx.rubric.weighted({c: cand["scores"][c]["score"] for c in CRITERIA})
        ranked = cand["tier"] is not None or cand["rank_in_tier"] is not None
        if alias not in ctx.passing and ranked:
            add("failing_ranked", where, "only passing candidates get a tier and rank (use null)")
        if alias in ctx.passing and (cand["tier"] is None or cand["rank_in_tier"] is None):
            add("unranked", where, "a passing candidate needs a tier and rank_in_tier")
        check_negative_judgments(alias, cand, add)
        for ev_id in cited(cand):
            if ev_id not in table:
                add(
                    "evidence_missing", where, f"cites evidence {ev_id!r} not in the evidence table"
                )

    _check_ordering(verdict, ctx, weighted, add)
    for ev_id, ev in table.items():
        msg = resolve_evidence(ev, ctx)
        if msg:
            add("evidence_unresolved", f"evidence/{ev_id}", msg)
    return problems


def cited(cand: Mapping[str, Any]) -> list[str]:
    """Every evidence id one candidate's grade cites."""
    ids = list(cand.get("evidence", []))
    for c in CRITERIA:
        ids += cand["scores"][c].get("evidence", [])
    for issue in cand["severe_issues"]:
        ids += issue["evidence"]
    return ids


def check_negative_judgments(
    alias: str, cand: Mapping[str, Any], add: Callable[[str, str, str], None]
) -> None:
    """Negative judgments need evidence, and a severe issue cannot sit in T1 (the tiers'
    definition: T1 has no severe issue)."""
    where = f"candidates/{alias}"
    for c in CRITERIA:
        s = cand["scores"][c]
        if s["score"] <= 2 and not s.get("evidence"):
            add("evidence_required", f"{where}/scores/{c}", "a score of 2 or less needs evidence")
    for i, issue in enumerate(cand["severe_issues"]):
        if not issue["evidence"]:
            add("evidence_required", f"{where}/severe_issues/{i}", "a severe issue needs evidence")
    if cand["tier"] is not None and cand["tier"] > 1 and not cited(cand):
        add("evidence_required", f"{where}/tier", "a tier below T1 needs evidence")
    if cand["tier"] == 1 and cand["severe_issues"]:
        categories = ", ".join(sorted({i["category"] for i in cand["severe_issues"]}))
        add(
            "severe_in_t1",
            f"{where}/tier",
            f"a candidate with a severe issue ({categories}) cannot be T1: use T3, "
            "or drop the issue if it is not severe",
        )


# Kept whole (C901): a flat list of independent checks, each adding its own problem
def _check_ordering(  # noqa: C901
    verdict: Mapping[str, Any],
    ctx: VerdictContext,
    weighted: Mapping[str, float],
    add: Callable[[str, str, str], None],
) -> None:
    cands = verdict["candidates"]
    ordering: list[str] = verdict["ordering"]
    if len(set(ordering)) != len(ordering):
        add("ordering", "ordering", "lists a candidate twice")
    if set(ordering) != set(ctx.passing):
        add(
            "ordering",
            "ordering",
            f"must list exactly the passing candidates {sorted(ctx.passing)}",
        )
    ranked = [a for a in ordering if a in cands and cands[a]["tier"] is not None]
    ranked = [a for a in ranked if cands[a]["rank_in_tier"] is not None]
    keys = [(cands[a]["tier"], cands[a]["rank_in_tier"]) for a in ranked]
    if keys != sorted(keys):
        add("ordering", "ordering", "must be sorted by tier, then rank_in_tier")

    tie_of: dict[str, int] = {}
    for i, tie in enumerate(verdict.get("ties", [])):
        if (
            len({(cands.get(a, {}).get("tier"), cands.get(a, {}).get("rank_in_tier")) for a in tie})
            != 1
        ):
            add("ties", f"ties/{i}", "tied candidates must share tier and rank_in_tier")
        for a in tie:
            if a not in ctx.passing:
                add("ties", f"ties/{i}", f"{a} is not a passing candidate")
            tie_of[a] = i

    by_tier: dict[int, list[str]] = {}
    for a in ranked:
        by_tier.setdefault(cands[a]["tier"], []).append(a)
    notes = {n["candidate"] for n in verdict.get("reorder_notes", []) if n["evidence"]}
    for tier, members in by_tier.items():
        for pos, a in enumerate(members):
            rank = cands[a]["rank_in_tier"]
            # Ranks start at 1 and never skip beyond the position (1,1,3 and 1,1,2 are both fine).
            if rank > pos + 1:
                add("rank", f"candidates/{a}/rank_in_tier", f"rank {rank} skips ranks in T{tier}")
            for b in members[pos + 1 :]:
                same = cands[b]["rank_in_tier"] == rank
                if same and tie_of.get(a, -1) != tie_of.get(b, -2):
                    add("ties", "ties", f"{a} and {b} share a rank but are not listed as a tie")
                if not same and weighted[a] + _EPS < weighted[b] and not ({a, b} & notes):
                    add(
                        "reorder_unexplained",
                        f"candidates/{a}",
                        f"ranked above {b} despite a lower weighted score "
                        f"({weighted[a]:.2f} < {weighted[b]:.2f}); "
                        "add a reorder note with evidence",
                    )


def resolve_evidence(ev: Mapping[str, Any], ctx: VerdictContext) -> str | None:
    """None when the evidence resolves, else why not."""
    kind = ev["type"]
    cand = ev.get("candidate")
    if kind == "trajectory":
        if not isinstance(cand, str) or cand not in ctx.trajectory_lengths:
            return f"unknown candidate {cand!r}"
        n = ctx.trajectory_lengths[cand]
        if not 0 <= ev["event_index"] < n:
            return f"candidate {cand} has no trajectory event {ev['event_index']} (it has {n})"
        return None
    if kind == "execution":
        for rec in ctx.executions:
            same_tree = cand is None or cand == rec.tree
            same_command = rec.command.strip() == ev["command"].strip()
            if same_command and rec.exit_code == ev["exit_code"] and same_tree:
                return None
        return "no check with this command and exit code appears in the tool log"
    return _resolve_code(ev, ctx)


def _resolve_code(ev: Mapping[str, Any], ctx: VerdictContext) -> str | None:
    cand, path, side = ev["candidate"], ev["path"], ev["side"]
    start, end = ev["line_start"], ev["line_end"]
    if end < start:
        return "line_end is before line_start"
    if cand != BASE and cand not in ctx.diffs:
        return f"unknown candidate {cand!r}"
    if cand != BASE:
        fd = ctx.diffs[cand].find(path)
        if fd is not None and fd.has_lines(side, start, end):
            return None
    # Not (entirely) in the diff: the lines may still exist in the whole file.
    tree = BASE if cand == BASE or side == "pre" else cand
    if cand != BASE and side == "pre":
        fd = ctx.diffs[cand].find(path)
        if fd is not None and fd.old_path:
            path = fd.old_path
    count = ctx.line_count(tree, path) if ctx.line_count is not None else None
    if count is None:
        return f"lines {start}-{end} ({side}) are not in {cand}'s diff of {path} nor in its tree"
    if end > count:
        return f"{path} has {count} lines in the {tree} tree, not {end}"
    return None
