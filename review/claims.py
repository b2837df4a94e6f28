"""The grader's claims about the code, pure (no Django): every `code` evidence a judgement
cites, with the text of what it backs.

A claim is one citation: a piece of `code` evidence (candidate, path, lines, side) cited by one
judgement of one candidate — a rubric score (its rationale), a severe issue (its description),
the tier (the candidate's own evidence list) or a reorder note. One evidence cited by two
judgements is two claims: it may be true of one and not of the other, and claim precision is
counted per criterion. Reviewers mark each claim after the reveal; `review.stats.claims`
turns the marks into precision.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

RUBRIC = (
    "approach_suitability",
    "implementation_precision",
    "minimality_of_changes",
    "unintended_side_effects",
    "codebase_consistency",
)
SEVERE_ISSUE = "severe_issue"
TIER = "tier"
REORDER = "reorder"
# What claim precision is reported by: the five rubric criteria, then the other judgements.
CLAIM_CRITERIA = (*RUBRIC, SEVERE_ISSUE, TIER, REORDER)
CRITERION_NAMES = {
    **{c: c.replace("_", " ").capitalize() for c in RUBRIC},
    SEVERE_ISSUE: "Severe issue",
    TIER: "Tier",
    REORDER: "Reorder",
}
BASE = "base"
MAX_TEXT = 2_000


@dataclass(frozen=True, slots=True)
class Claim:
    key: str  # unique within one grader run: evidence id | candidate judged | judgement
    evidence_id: str
    about: str  # the candidate key (attempt id) whose judgement cites the evidence
    criterion: str  # one of CLAIM_CRITERIA
    text: str  # the rationale, issue description or note the evidence backs
    score: int | None  # the rubric score, for a rubric claim
    category: str  # the severe issue's category, for an issue claim
    target: str  # the candidate key whose tree holds the lines, or "base"
    path: str
    line_start: int
    line_end: int
    side: str  # "pre" or "post"


def _code(ev: Any) -> tuple[str, str, int, int, str] | None:
    if not isinstance(ev, Mapping) or ev.get("type") != "code":
        return None
    start, end = ev.get("line_start"), ev.get("line_end")
    path, side = ev.get("path"), ev.get("side")
    if not (isinstance(start, int) and isinstance(end, int) and 1 <= start <= end):
        return None
    if not isinstance(path, str) or not path or side not in ("pre", "post"):
        return None
    return str(ev.get("candidate", "")), path, start, end, str(side)


def _ids(value: Any) -> list[str]:
    return [str(v) for v in value] if isinstance(value, list) else []


# (context, criterion, text, score, category, evidence ids)
_Citation = tuple[str, str, str, int | None, str, list[str]]


def _citations(judgement: Mapping[str, Any]) -> Iterator[_Citation]:
    """(context, criterion, text, score, category, evidence ids) of one candidate's judgement."""
    scores = judgement.get("scores")
    if isinstance(scores, Mapping):
        for c in RUBRIC:
            s = scores.get(c)
            if isinstance(s, Mapping):
                score = s.get("score")
                yield (
                    c,
                    c,
                    str(s.get("rationale") or ""),
                    score if isinstance(score, int) else None,
                    "",
                    _ids(s.get("evidence")),
                )
    issues = judgement.get("severe_issues")
    for n, issue in enumerate(issues if isinstance(issues, list) else []):
        if isinstance(issue, Mapping):
            yield (
                f"issue{n}",
                SEVERE_ISSUE,
                str(issue.get("description") or ""),
                None,
                str(issue.get("category") or "other"),
                _ids(issue.get("evidence")),
            )
    yield TIER, TIER, str(judgement.get("summary") or ""), None, "", _ids(judgement.get("evidence"))


def code_claims(
    evidence: Mapping[str, Any],
    judgements: Mapping[str, Mapping[str, Any]],
    reorder_notes: Sequence[Any] = (),
) -> list[Claim]:
    """Every citation of `code` evidence, in the order the judgements make them.

    `evidence` is the verdict's evidence table; `judgements` maps candidate keys to
    {scores, severe_issues, evidence, summary} (a stored grade, or the verdict's candidate);
    evidence ids that name no `code` evidence are skipped (trajectory and execution
    evidence cite no diff line).
    """
    out: list[Claim] = []
    seen: set[str] = set()

    def add(
        ev_id: str,
        about: str,
        context: str,
        criterion: str,
        text: str,
        score: int | None,
        category: str,
    ) -> None:
        code = _code(evidence.get(ev_id))
        key = f"{ev_id}|{about}|{context}"
        if code is None or key in seen:
            return
        seen.add(key)
        target, path, start, end, side = code
        out.append(
            Claim(
                key,
                ev_id,
                about,
                criterion,
                text[:MAX_TEXT],
                score,
                category,
                target,
                path,
                start,
                end,
                side,
            )
        )

    for about, judgement in judgements.items():
        if not isinstance(judgement, Mapping):
            continue
        for context, criterion, text, score, category, ids in _citations(judgement):
            for ev_id in ids:
                add(ev_id, about, context, criterion, text, score, category)
    for n, note in enumerate(reorder_notes):
        if isinstance(note, Mapping):
            about = str(note.get("candidate", ""))
            for ev_id in _ids(note.get("evidence")):
                add(ev_id, about, f"reorder{n}", REORDER, str(note.get("note") or ""), None, "")
    return out
