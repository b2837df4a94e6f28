"""Checks of what a reviewer points at in a candidate's diff: a file to mark viewed, a line to
anchor a fix request to. The diff is the one the reviewer was shown: redacted like the page,
and measured against the same base file the page expands context from."""

from __future__ import annotations

from django.core.exceptions import ValidationError

from review.blinded_cache import assignment_redactor, base_files
from review.diffs import FileDiff, file_id_for, parse_patch
from review.diffs.anchors import anchor_problem, line_count
from review.models import Candidate

NOT_IN_DIFF = "That file is not in this candidate's diff."


def candidate_file_diffs(*, candidate: Candidate) -> list[FileDiff]:
    patch = candidate.attempt.patch
    if patch is None:
        return []
    redactor = assignment_redactor(assignment=candidate.assignment)
    return list(parse_patch(redactor(patch.text)))


def file_by_id(*, candidate: Candidate, file_id: str) -> FileDiff:
    """The file of the candidate's diff with that page id; ValidationError if there is none."""
    for f in candidate_file_diffs(candidate=candidate):
        if file_id_for(f.path) == file_id:
            return f
    raise ValidationError(NOT_IN_DIFF)


def fix_anchor_check(*, candidate: Candidate, path: str, line: int, side: str) -> None:
    """A fix request must point at a line the reviewer was shown: file, side and line number."""
    file = next((f for f in candidate_file_diffs(candidate=candidate) if f.path == path), None)
    if file is None:
        raise ValidationError(NOT_IN_DIFF)
    old_count = None
    if file.change != "added" and file.old_path:
        task = candidate.assignment.group.task
        base = base_files(task=task, paths=[file.old_path]).get(file.old_path)
        old_count = line_count(base) if base else None
    problem = anchor_problem(file, line=line, side=side, old_line_count=old_count)
    if problem:
        raise ValidationError(problem)
