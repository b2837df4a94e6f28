"""Reviews done outside GAGAR Review, in the format of the shared data's `reviews/` folder.

One JSON object per line: a task and one reviewer (the file is the reviewer):

    {"instance_id", "minutes", "notes", "candidates": [
        {"patch_sha256", "scores": {five criteria: 1-5}, "tier": 1|2|3, "rank_in_tier": n,
         "exploit": bool, "mergeability": "as_is"|"after_minor_fixes"|"not_mergeable",
         "evidence": [str], "summary": str}, …]}

Candidates are keyed by the SHA-256 of the patch text (UTF-8): the join key with the attempts.
Pure: this reads and checks the file; matching against groups and writing is the service's.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from grading.domain.jsonfiles import JsonReader, JsonRow
from grading.domain.records import ImportProblem, ImportProblemError
from grading.domain.wording import shown

CRITERIA = (
    "approach_suitability",
    "implementation_precision",
    "minimality_of_changes",
    "unintended_side_effects",
    "codebase_consistency",
)
MERGEABILITY = ("as_is", "after_minor_fixes", "not_mergeable")
_HEX = frozenset("0123456789abcdef")


@dataclass(frozen=True)
class CandidateReview:
    field: str  # "$.candidates[i]", for messages
    patch_sha256: str
    tier: int
    rank_in_tier: int | None
    exploit: bool
    scores: dict[str, int]
    mergeability: str
    evidence: list[str]
    summary: str


@dataclass(frozen=True)
class TaskReview:
    source: str
    line: int | None
    instance_id: str
    minutes: float | None
    notes: str
    candidates: list[CandidateReview]
    sha256: str  # of the line's canonical JSON: re-importing the same line is a no-op

    def problem(self, field: str, message: str) -> ImportProblem:
        return ImportProblem(self.source, self.line, field, message)


def _fail(row: JsonRow, field: str, message: str) -> ImportProblemError:
    return ImportProblemError(ImportProblem(row.source, row.line, row.field + field, message))


def _int_in(row: JsonRow, field: str, value: object, low: int, high: int | None) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise _fail(row, field, "must be a whole number")
    if value < low or (high is not None and value > high):
        raise _fail(row, field, f"must be between {low} and {high}" if high else f"must be ≥ {low}")
    return value


def _candidate(row: JsonRow, index: int, value: object) -> CandidateReview:
    at = f".candidates[{index}]"
    if not isinstance(value, dict):
        raise _fail(row, at, "a candidate review must be an object")
    sha = value.get("patch_sha256")
    if not isinstance(sha, str) or len(sha) != 64 or not set(sha) <= _HEX:
        raise _fail(row, f"{at}.patch_sha256", "must be 64 lowercase hex digits (SHA-256)")
    tier = _int_in(row, f"{at}.tier", value.get("tier"), 1, 3)
    rank = value.get("rank_in_tier")
    rank_value = None if rank is None else _int_in(row, f"{at}.rank_in_tier", rank, 1, None)
    exploit = value.get("exploit", False)
    if not isinstance(exploit, bool):
        raise _fail(row, f"{at}.exploit", "must be true or false")
    scores = value.get("scores")
    if not isinstance(scores, dict):
        raise _fail(
            row, f"{at}.scores", f"must map the five criteria to 1-5: {', '.join(CRITERIA)}"
        )
    unknown = sorted(set(scores) - set(CRITERIA))
    if unknown:
        raise _fail(row, f"{at}.scores.{unknown[0]}", "is not one of the five criteria")
    checked = {
        c: _int_in(row, f"{at}.scores.{c}", scores[c], 1, 5) for c in CRITERIA if c in scores
    }
    merge = value.get("mergeability")
    if merge not in MERGEABILITY:
        raise _fail(row, f"{at}.mergeability", f"must be one of {', '.join(MERGEABILITY)}")
    evidence = value.get("evidence", [])
    if not isinstance(evidence, list) or not all(isinstance(e, str) for e in evidence):
        raise _fail(row, f"{at}.evidence", "must be a list of strings")
    summary = value.get("summary", "")
    if not isinstance(summary, str):
        raise _fail(row, f"{at}.summary", "must be a string")
    for name, text in (
        ("summary", summary),
        *((f"evidence[{i}]", e) for i, e in enumerate(evidence)),
    ):
        if "\x00" in text:
            raise _fail(row, f"{at}.{name}", "NUL characters are not allowed here")
    return CandidateReview(
        f"$.candidates[{index}]", sha, tier, rank_value, exploit, checked, merge, evidence, summary
    )


def _task_review(row: JsonRow) -> TaskReview:
    value = row.value
    if not isinstance(value, dict):
        raise _fail(row, "", "a review line must be an object")
    instance_id = value.get("instance_id")
    if not isinstance(instance_id, str) or not instance_id or "\x00" in instance_id:
        raise _fail(row, ".instance_id", "required string is missing")
    minutes = value.get("minutes")
    if minutes is not None and (
        isinstance(minutes, bool) or not isinstance(minutes, int | float) or minutes < 0
    ):
        raise _fail(row, ".minutes", "must be a non-negative number")
    notes = value.get("notes", "")
    if not isinstance(notes, str) or "\x00" in notes:
        raise _fail(row, ".notes", "must be a string without NUL characters")
    candidates = value.get("candidates")
    if not isinstance(candidates, list) or not candidates:
        raise _fail(row, ".candidates", "must be a non-empty list of candidate reviews")
    parsed = [_candidate(row, i, c) for i, c in enumerate(candidates)]
    seen: dict[str, int] = {}
    for i, c in enumerate(parsed):
        if c.patch_sha256 in seen:
            raise _fail(
                row,
                f".candidates[{i}].patch_sha256",
                f"{c.patch_sha256} is reviewed twice on this line "
                f"(also candidates[{seen[c.patch_sha256]}])",
            )
        seen[c.patch_sha256] = i
    canonical = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return TaskReview(
        source=row.source,
        line=row.line,
        instance_id=instance_id,
        minutes=float(minutes) if minutes is not None else None,
        notes=notes,
        candidates=parsed,
        sha256=hashlib.sha256(canonical.encode("utf-8", "surrogatepass")).hexdigest(),
    )


def read_reviews(
    path: Path, reader: JsonReader | None = None
) -> tuple[list[TaskReview], list[ImportProblem]]:
    """Every line's review, and every problem (a bad line is reported, the rest still read)."""
    reviews: list[TaskReview] = []
    problems: list[ImportProblem] = []
    seen: dict[str, int | None] = {}
    rows = 0
    try:
        for row in (reader or JsonReader()).rows(path):
            rows += 1
            try:
                review = _task_review(row)
            except ImportProblemError as exc:
                problems.append(exc.problem)
                continue
            if review.instance_id in seen:
                problems.append(
                    review.problem(
                        "$.instance_id",
                        f"task {shown(review.instance_id)} is reviewed twice in this file "
                        f"(also line {seen[review.instance_id]})",
                    )
                )
                continue
            seen[review.instance_id] = review.line
            reviews.append(review)
    except ImportProblemError as exc:
        problems.append(exc.problem)
        return reviews, problems
    if not rows:
        # Otherwise an empty file "imports" as a campaign without reviews, and succeeds.
        problems.append(
            ImportProblem(
                str(path), None, "", "no reviews (the file is empty, blank or an empty list)"
            )
        )
    return reviews, problems


def review_notes(candidate: CandidateReview) -> str:
    """The label's notes: the reviewer's summary and the evidence behind it."""
    parts = [candidate.summary] if candidate.summary else []
    parts += [f"- {e}" for e in candidate.evidence]
    return "\n".join(parts)


def as_json(review: TaskReview) -> dict[str, Any]:
    """The provenance kept on the imported assignment."""
    return {
        "source": review.source,
        "line": review.line,
        "sha256": review.sha256,
        "minutes": review.minutes,
        "notes": review.notes,
    }
