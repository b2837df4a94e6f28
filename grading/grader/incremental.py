"""The verdict built call by call: each `grade_candidate` is checked and stored as it arrives, and
`submit_ranking` assembles the `gagar.verdict.v1` verdict and runs the whole-verdict checks.

Problems name the one candidate and field to fix, so a re-ask never asks for the whole verdict.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from jsonschema import Draft202012Validator

from grading.grader.inputs import CRITERIA
from grading.grader.protocol import (
    EVIDENCE_FIELDS,
    GRADE_PARAMETERS,
    RANK_PARAMETERS,
    evidence_entry,
    ranks_from_ordering,
)
from grading.grader.verdict import SCHEMA_ID, schema_errors
from grading.grader.verdict_check import (
    Problem,
    VerdictContext,
    check_negative_judgments,
    check_verdict,
    cited,
    resolve_evidence,
)

_GRADE = Draft202012Validator(GRADE_PARAMETERS)
_RANK = Draft202012Validator(RANK_PARAMETERS)
_TIER_TEXT = re.compile(r"^\s*T?([123])\s*$", re.IGNORECASE)
# Problems a new submit_ranking fixes; the others need a candidate's grade sent again.
RANKING_CODES = frozenset(
    {"ordering", "ties", "rank", "reorder_unexplained", "missing_candidate", "unranked"}
)


def _schema_problems(validator: Draft202012Validator, args: Any, prefix: str) -> list[Problem]:
    out = []
    for err in sorted(validator.iter_errors(args), key=lambda e: list(e.absolute_path)):
        where = "/".join(str(p) for p in err.absolute_path) or "(arguments)"
        out.append(Problem("schema", f"{prefix}{where}", err.message[:300]))
    return out


def _fill_items(items: Any) -> Any:
    """Evidence items with the nullable fields a model left out set to null."""
    if not isinstance(items, list):
        return items
    return [{**dict.fromkeys(EVIDENCE_FIELDS), **i} if isinstance(i, dict) else i for i in items]


def normalise_grade(args: Mapping[str, Any]) -> dict[str, Any]:
    """Leniency for what models commonly leave out or spell differently; the schema decides."""
    out = dict(args)
    for key in ("severe_issues", "tier_evidence", "evidence"):
        out.setdefault(key, [])
    out.setdefault("exploit_suspected", False)
    out.setdefault("summary", "")
    if isinstance(out.get("tier"), str) and (m := _TIER_TEXT.match(out["tier"])):
        out["tier"] = int(m.group(1))
    scores = out.get("scores")
    if isinstance(scores, dict):
        out["scores"] = {
            c: ({"evidence": [], **s} if isinstance(s, dict) else s) for c, s in scores.items()
        }
    for issue in out["severe_issues"] if isinstance(out["severe_issues"], list) else []:
        if isinstance(issue, dict):
            issue.setdefault("evidence", [])
    out["evidence"] = _fill_items(out["evidence"])
    return out


def normalise_ranking(args: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(args)
    for key in ("ties", "reorder_notes", "evidence"):
        out.setdefault(key, [])
    for note in out["reorder_notes"] if isinstance(out["reorder_notes"], list) else []:
        if isinstance(note, dict):
            note.setdefault("evidence", [])
    out["evidence"] = _fill_items(out["evidence"])
    return out


@dataclass
class VerdictBuilder:
    """Grades and evidence received so far; `context` gives the live check context (the
    execution log grows while the grader works)."""

    context: Callable[[], VerdictContext]
    grades: dict[str, dict[str, Any]] = field(default_factory=dict)  # alias -> v1 candidate
    evidence: dict[str, dict[str, Any]] = field(default_factory=dict)  # id -> v1 entry
    owner: dict[str, str] = field(default_factory=dict)  # evidence id -> alias, or "ranking"
    final: dict[str, Any] | None = None

    def missing(self) -> list[str]:
        """Passing candidates without an accepted grade, in alias order."""
        ctx = self.context()
        return [a for a in ctx.aliases if a in ctx.passing and a not in self.grades]

    def _new_evidence(
        self, items: list[dict[str, Any]], owner: str, where: str, ctx: VerdictContext
    ) -> tuple[dict[str, dict[str, Any]], list[Problem]]:
        new: dict[str, dict[str, Any]] = {}
        problems: list[Problem] = []
        for item in items:
            ev_id = str(item["id"])
            entry, missing = evidence_entry(item)
            here = f"{where}evidence/{ev_id}"
            if missing:
                problems.append(
                    Problem(
                        "evidence_fields",
                        here,
                        f"{entry['type']} evidence needs {', '.join(missing)}",
                    )
                )
                continue
            known = self.evidence.get(ev_id)
            if known is not None and known != entry and self.owner.get(ev_id) != owner:
                problems.append(
                    Problem(
                        "evidence_id",
                        here,
                        f"id {ev_id!r} already names other evidence; choose a new id",
                    )
                )
                continue
            msg = resolve_evidence(entry, ctx)
            if msg:
                problems.append(Problem("evidence_unresolved", here, msg))
            new[ev_id] = entry
        return new, problems

    def grade(self, raw: Mapping[str, Any]) -> tuple[str, list[Problem]]:
        """Check one candidate's grade; store it when it has no problem. Returns the alias."""
        args = normalise_grade(raw)
        alias = str(args.get("candidate", "?"))
        problems = _schema_problems(_GRADE, args, "")
        if problems:
            return alias, problems
        ctx = self.context()
        if alias not in ctx.aliases:
            known = ", ".join(ctx.aliases)
            return alias, [Problem("unknown_candidate", "candidate", f"aliases are {known}")]
        new, problems = self._new_evidence(args["evidence"], alias, "", ctx)
        cand = {
            "scores": {c: dict(args["scores"][c]) for c in CRITERIA},
            "severe_issues": [dict(i) for i in args["severe_issues"]],
            "exploit_suspected": bool(args["exploit_suspected"]),
            "tier": args["tier"],
            "rank_in_tier": None,
            "summary": args["summary"],
            "evidence": list(args["tier_evidence"]),
        }

        def add(code: str, where: str, msg: str) -> None:
            problems.append(Problem(code, where.removeprefix(f"candidates/{alias}/"), msg))

        if alias not in ctx.passing and cand["tier"] is not None:
            add("failing_ranked", "tier", "a failing candidate is context only: tier null")
        if alias in ctx.passing and cand["tier"] is None:
            add("unranked", "tier", "a passing candidate needs a tier (1, 2 or 3)")
        check_negative_judgments(alias, cand, add)
        for ev_id in cited(cand):
            if ev_id not in new and ev_id not in self.evidence:
                add("evidence_missing", "evidence", f"cites {ev_id!r}, which is not defined")
        if problems:
            return alias, problems
        self.grades[alias] = cand
        for ev_id, entry in new.items():
            self.evidence[ev_id] = entry
            self.owner[ev_id] = alias
        return alias, []

    def rank(self, raw: Mapping[str, Any], budget_use: Mapping[str, Any]) -> list[Problem]:
        """Assemble and check the whole verdict; on success it is in `final`."""
        args = normalise_ranking(raw)
        problems = _schema_problems(_RANK, args, "")
        if problems:
            return problems
        missing = self.missing()
        if missing:
            return [
                Problem(
                    "missing_candidate",
                    "ordering",
                    f"grade {', '.join(missing)} with grade_candidate before submit_ranking",
                )
            ]
        ctx = self.context()
        new, problems = self._new_evidence(args["evidence"], "ranking", "", ctx)
        ordering = list(args["ordering"])
        for i, tie in enumerate(args["ties"]):
            spots = sorted(ordering.index(a) for a in tie if a in ordering)
            if spots and spots[-1] - spots[0] != len(spots) - 1:
                problems.append(
                    Problem("ties", f"ties/{i}", "tied candidates must be adjacent in ordering")
                )
        tiers = {a: g["tier"] for a, g in self.grades.items()}
        ranks = ranks_from_ordering(ordering, tiers, [t for t in args["ties"] if len(t) > 1])
        candidates = copy.deepcopy(self.grades)
        for alias, rank in ranks.items():
            if alias in candidates and candidates[alias]["tier"] is not None:
                candidates[alias]["rank_in_tier"] = rank
        verdict = {
            "schema": SCHEMA_ID,
            "candidates": candidates,
            "ordering": ordering,
            "ties": [list(t) for t in args["ties"]],
            "reorder_notes": [dict(n) for n in args["reorder_notes"]],
            "evidence": {**self.evidence, **new},
            "confidence": args["confidence"],
            "budget_use": dict(budget_use),
        }
        errors = schema_errors(verdict)
        problems += [Problem("schema", e.split(":", 1)[0], e.split(":", 1)[-1]) for e in errors]
        if not errors:
            problems += check_verdict(verdict, ctx)
        if not problems:
            self.final = verdict
        return problems


def problem_text(problems: list[Problem], *, limit: int = 20) -> str:
    lines = [f"- {p}" for p in problems[:limit]]
    if len(problems) > limit:
        lines.append(f"(and {len(problems) - limit} more)")
    return "\n".join(lines)
