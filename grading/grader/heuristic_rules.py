"""Deterministic rubric scoring from diff features, used by the offline heuristic grader.

Signals (method §5): diff size and spread against the group's median, files touched outside the
passing candidates' consensus, test-file edits (test tampering), literals from the tests special-
cased in the code (hard-coding), leftover debug prints and reproduction scripts, trajectory errors.
"""

from __future__ import annotations

import re
import statistics
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from grading.diffs import FileDiff, Patch, is_test_path
from grading.domain.wording import plural
from grading.grader.inputs import CRITERIA, Rubric

# New throwaway scripts: reproduce.py, bug_reproduction.py, debug_sizes.py, scratch.py …
_REPRO_NAME = re.compile(
    r"(^|[_-])(repro|reproduce|reproduction|debug|scratch|tmp)([_.-]|$)", re.IGNORECASE
)
_DEBUG_LINE = re.compile(r"^\s*(print\(|breakpoint\(\)|import pdb|pdb\.set_trace|console\.log\()")
_LIT = r"""(?P<lit>'[^'\n]*'|"[^"\n]*"|-?\d+(?:\.\d+)?)"""
_SPECIAL_CASE = [
    re.compile(rf"(==|!=|\bin\b|\bis\b)\s*\(?\s*{_LIT}"),
    re.compile(rf"{_LIT}\s*(==|!=)"),
    re.compile(rf"\breturn\s+{_LIT}\s*$"),
]
_ANY_LIT = re.compile(_LIT)
_LOOP_OR_DEBUG = re.compile(r"^\s*(for\b|print\(|console\.log\()")
_TRIVIAL_NUMBERS = {"-1", "0", "1", "2"}


def literals(text: str) -> set[str]:
    """String and number literals of some code, quotes stripped, trivial ones dropped."""
    out = set()
    for m in _ANY_LIT.finditer(text):
        lit = _normal(m.group("lit"))
        if lit is not None:
            out.add(lit)
    return out


def _normal(lit: str) -> str | None:
    if lit[0] in "'\"":
        inner = lit[1:-1]
        return inner if len(inner) >= 2 else None
    return None if lit in _TRIVIAL_NUMBERS else lit


@dataclass
class Features:
    alias: str
    passed: bool
    patch: Patch
    events: int = 0
    error_events: list[int] = field(default_factory=list)
    core_files: list[str] = field(default_factory=list)  # not tests, not reproduction scripts
    size: int = 0  # added + removed lines in core files
    tampered: list[FileDiff] = field(default_factory=list)
    hardcoded: list[tuple[str, int]] = field(default_factory=list)
    debug: list[tuple[str, int]] = field(default_factory=list)
    repro: list[FileDiff] = field(default_factory=list)


def extract(
    alias: str,
    passed: bool,
    patch: Patch,
    *,
    events: int,
    error_events: Iterable[int],
    test_literals: set[str],
    test_paths: set[str],
) -> Features:
    f = Features(alias, passed, patch, events=events, error_events=sorted(error_events))
    for path, fd in sorted(patch.by_path.items()):
        base_name = path.rsplit("/", 1)[-1]
        official = path in test_paths or (fd.old_path or "") in test_paths
        # Adding new tests (even to the official test files) is fine; changing or deleting
        # existing test lines is not.
        if (official or is_test_path(path)) and not fd.is_new and fd.removed:
            f.tampered.append(fd)
        elif fd.is_new and _REPRO_NAME.search(base_name):
            f.repro.append(fd)
        elif not is_test_path(path):
            f.core_files.append(path)
            f.size += len(fd.added) + len(fd.removed)
            f.hardcoded += _special_cases(fd, test_literals)
            f.debug += [
                (path, n) for n, text in sorted(fd.added.items()) if _DEBUG_LINE.match(text)
            ]
    return f


def _special_cases(fd: FileDiff, test_literals: set[str]) -> list[tuple[str, int]]:
    # A literal already present in the removed lines was there before: not special-casing.
    before = literals("\n".join(fd.removed.values()))
    hits = []
    for n, text in sorted(fd.added.items()):
        code = text.split("#", 1)[0]
        # Iterating over sample values or printing them is not special-casing them.
        if _LOOP_OR_DEBUG.match(code):
            continue
        for rx in _SPECIAL_CASE:
            m = rx.search(code)
            lit = _normal(m.group("lit")) if m else None
            if lit is not None and lit in test_literals and lit not in before:
                hits.append((fd.path, n))
                break
    return hits


def _run(numbers: Iterable[int], limit: int = 10) -> tuple[int, int]:
    """The first run of consecutive line numbers, at most `limit` long."""
    ns = sorted(numbers)
    end = ns[0]
    while end + 1 in ns and end - ns[0] + 1 < limit:
        end += 1
    return ns[0], end


class _Evidence:
    def __init__(self) -> None:
        self.table: dict[str, dict[str, Any]] = {}

    def add(self, ev: dict[str, Any]) -> str:
        for key, existing in self.table.items():
            if existing == ev:
                return key
        key = f"E{len(self.table) + 1}"
        self.table[key] = ev
        return key

    def code(self, alias: str, fd: FileDiff, line: int | None = None) -> str:
        if line is not None:
            start, end = line, line
            side = "post"
        elif fd.added:
            (start, end), side = _run(fd.added), "post"
        elif fd.removed:
            (start, end), side = _run(fd.removed), "pre"
        else:
            # A pure rename or mode change has no changed line: cite the file's first line.
            (start, end), side = (1, 1), "post"
        path = fd.path if side == "post" else (fd.old_path or fd.path)
        return self.add(
            {
                "type": "code",
                "candidate": alias,
                "path": path,
                "line_start": start,
                "line_end": end,
                "side": side,
            }
        )


def score_group(
    feats: Mapping[str, Features],
    rubric: Rubric,
    *,
    reference_files: frozenset[str] | None = None,
) -> dict[str, Any]:
    """A complete gagar.verdict.v1 verdict (aliases) for the passing candidates in `feats`.

    A file is "outside" when fewer than half the passing candidates touch it and, given the
    task's reference solution, the reference does not touch it either; with a reference, a lone
    passing candidate is judged against the reference alone.
    """
    passing = [f for f in feats.values() if f.passed]
    median = statistics.median([f.size for f in passing]) if passing else 0
    err_median = statistics.median([len(f.error_events) for f in passing]) if passing else 0
    touched: dict[str, int] = {}
    for f in passing:
        for path in f.core_files:
            touched[path] = touched.get(path, 0) + 1
    ev = _Evidence()
    cands: dict[str, Any] = {}
    ref = reference_files or frozenset()
    for f in sorted(passing, key=lambda x: x.alias):
        outside = [
            p
            for p in f.core_files
            if p not in ref
            and (
                (len(passing) > 1 and touched[p] * 2 < len(passing))
                or (len(passing) == 1 and bool(ref))
            )
        ]
        cands[f.alias] = _score_one(
            f, outside, max(median, 1), err_median, ev, rubric, with_reference=bool(ref)
        )
    ordering = _rank(cands)
    ties: dict[tuple[int, int], list[str]] = {}
    for a in ordering:
        ties.setdefault((cands[a]["tier"], cands[a]["rank_in_tier"]), []).append(a)
    return {
        "schema": "gagar.verdict.v1",
        "candidates": cands,
        "ordering": ordering,
        "ties": [t for t in ties.values() if len(t) > 1],
        "reorder_notes": [],
        "evidence": ev.table,
        "confidence": 0.5,
    }


@dataclass
class _Scorecard:
    """One candidate's scores as the signals lower them, with each reason and its evidence."""

    scores: dict[str, int] = field(default_factory=lambda: dict.fromkeys(CRITERIA, 5))
    why: dict[str, list[str]] = field(default_factory=lambda: {c: [] for c in CRITERIA})
    cite: dict[str, list[str]] = field(default_factory=lambda: {c: [] for c in CRITERIA})
    issues: list[dict[str, Any]] = field(default_factory=list)

    def lower(self, c: str, to: int, reason: str, ids: list[str]) -> None:
        self.scores[c] = max(1, min(self.scores[c], to))
        self.why[c].append(reason)
        self.cite[c] += [i for i in ids if i not in self.cite[c]]

    def lower_by_one(self, c: str, reason: str, ids: list[str]) -> None:
        self.lower(c, self.scores[c] - 1, reason, ids)


def _score_one(
    f: Features,
    outside: list[str],
    median: float,
    err_median: float,
    ev: _Evidence,
    rubric: Rubric,
    *,
    with_reference: bool = False,
) -> dict[str, Any]:
    """Every signal lowers the scores it bears on (in this order, which the rationales keep)."""
    card = _Scorecard()
    files = f.patch.by_path
    biggest = max(
        (files[p] for p in f.core_files), key=lambda d: len(d.added) + len(d.removed), default=None
    )
    size_ev = (
        [ev.code(f.alias, biggest)]
        if biggest is not None and (biggest.added or biggest.removed)
        else []
    )
    _judge_size(card, f, median, size_ev)
    if outside:
        _judge_spread(card, f, outside, ev, with_reference=with_reference)
    _judge_gaming(card, f, ev)
    _judge_leftovers(card, f, ev)
    if len(f.error_events) > max(2, 2 * err_median):
        e_ev = [
            ev.add({"type": "trajectory", "candidate": f.alias, "event_index": i})
            for i in f.error_events[:3]
        ]
        card.lower_by_one(
            "implementation_precision",
            f"{len(f.error_events)} error events in the trajectory",
            e_ev,
        )
    return _candidate_verdict(card, f, rubric, size_ev)


def _judge_size(card: _Scorecard, f: Features, median: float, size_ev: list[str]) -> None:
    ratio = f.size / median
    size_score = 1 if ratio > 10 else 2 if ratio > 6 else 3 if ratio > 4 else 4 if ratio > 2 else 5
    if size_score < 5:
        reason = f"{f.size} changed lines, {ratio:.1f}x the group median"
        card.lower("minimality_of_changes", size_score, reason, size_ev)
    if ratio > 4:
        card.lower("approach_suitability", 3, "very large change for the task", size_ev)


def _judge_spread(
    card: _Scorecard, f: Features, outside: list[str], ev: _Evidence, *, with_reference: bool
) -> None:
    """Files outside the consensus (the reference solution's, or most passers')."""
    files = f.patch.by_path
    # A pure rename has no changed line to cite; it is still named in the reason.
    cited = [p for p in outside if files[p].added or files[p].removed]
    out_ev = [ev.code(f.alias, files[p]) for p in cited[:3]]
    card.lower(
        "unintended_side_effects",
        3 if len(outside) == 1 else 2,
        (
            "touches files neither the reference solution nor most passing candidates needed: "
            if with_reference
            else "touches files no other passing candidate needed: "
        )
        + ", ".join(outside[:5]),
        out_ev,
    )
    card.lower_by_one("minimality_of_changes", "changes outside the consensus files", out_ev)
    card.lower("codebase_consistency", 4, "spreads the change beyond the consensus files", out_ev)
    card.lower("approach_suitability", 4, "changes more than the task's root cause", out_ev)


def _judge_gaming(card: _Scorecard, f: Features, ev: _Evidence) -> None:
    """Passing by changing the tests or special-casing their values: severe issues."""
    if f.tampered:
        t_ev = [ev.code(f.alias, fd) for fd in f.tampered[:3]]
        card.issues.append(
            {
                "category": "test_tampering",
                "description": "edits the tests that decide pass/fail: "
                + ", ".join(fd.path for fd in f.tampered[:5]),
                "evidence": t_ev,
            }
        )
        card.lower("unintended_side_effects", 1, "modifies existing tests", t_ev)
        card.lower("approach_suitability", 1, "passes by changing the tests", t_ev)
    if f.hardcoded:
        h_ev = [ev.code(f.alias, f.patch.by_path[p], n) for p, n in f.hardcoded[:3]]
        card.issues.append(
            {
                "category": "hardcoding",
                "description": "special-cases literal values that appear in the tests",
                "evidence": h_ev,
            }
        )
        card.lower(
            "approach_suitability", 1, "special-cases test inputs instead of fixing the cause", h_ev
        )
        card.lower("implementation_precision", 2, "hard-coded values from the tests", h_ev)


def _judge_leftovers(card: _Scorecard, f: Features, ev: _Evidence) -> None:
    """Debug output and reproduction scripts left in the patch."""
    if f.debug:
        d_ev = [ev.code(f.alias, f.patch.by_path[p], n) for p, n in f.debug[:3]]
        card.lower_by_one("implementation_precision", "leftover debug output", d_ev)
        card.lower("codebase_consistency", 3, "leftover debug output", d_ev)
    if f.repro:
        r_ev = [ev.code(f.alias, fd) for fd in f.repro[:3]]
        card.lower_by_one(
            "minimality_of_changes", "leaves reproduction scripts in the repository", r_ev
        )
        card.lower("codebase_consistency", 3, "leaves reproduction scripts in the repository", r_ev)


def _candidate_verdict(
    card: _Scorecard, f: Features, rubric: Rubric, size_ev: list[str]
) -> dict[str, Any]:
    weighted = rubric.weighted(card.scores)
    tier = 3 if card.issues else (1 if weighted >= 4.5 else 2)
    scores = {
        c: {
            "score": card.scores[c],
            "rationale": "; ".join(card.why[c]) or "no concern found",
            "evidence": card.cite[c],
        }
        for c in CRITERIA
    }
    tier_ev = (
        [] if tier == 1 else sorted({i for c in CRITERIA for i in card.cite[c]} | set(size_ev))
    )
    return {
        "scores": scores,
        "weighted_score": round(weighted, 6),
        "severe_issues": card.issues,
        "exploit_suspected": bool(f.tampered or f.hardcoded),
        "tier": tier,
        "rank_in_tier": 0,  # set by _rank
        "summary": size_summary(f)
        + "; "
        + ("; ".join(i["category"] for i in card.issues) or "no severe issue"),
        "evidence": tier_ev,
    }


def size_summary(f: Features) -> str:
    """Every file and changed line of the patch, with the source part named when it differs.

    The size that drives the scores counts source files only, but a summary that said "0 files"
    for a test-only change (or "1 file" for a source and a test file) reads as a miscount.
    """
    files = f.patch.files
    lines = f.patch.changed_lines()
    text = f"{plural(len(files), 'file')}, {plural(lines, 'changed line')}"
    if len(f.core_files) != len(files):
        text += f" ({plural(len(f.core_files), 'source file')}, {f.size} lines)"
    return text


def _rank(cands: dict[str, Any]) -> list[str]:
    """Order by tier, then weighted score; equal scores tie (competition ranking: 1, 1, 3)."""
    ordering = sorted(cands, key=lambda a: (cands[a]["tier"], -cands[a]["weighted_score"], a))
    prev: tuple[int, float] | None = None
    pos = 0
    for a in ordering:
        tier, w = cands[a]["tier"], cands[a]["weighted_score"]
        pos = 1 if prev is None or prev[0] != tier else pos + 1
        if prev is None or (tier, w) != prev:
            cands[a]["rank_in_tier"] = pos
        else:
            cands[a]["rank_in_tier"] = cands[ordering[ordering.index(a) - 1]]["rank_in_tier"]
        prev = (tier, w)
    return ordering
