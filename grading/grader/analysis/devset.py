"""The reviewed SWE-bench groups as plain data: tasks, distinct resolved patches, human labels.

Reads `groups.jsonl` and `reviews/rater-*.jsonl` of the shared data folder in place (see its
README; the reviews with the importer's own parser, `grading.domain.reviews_file`): a review
names a candidate by the SHA-256 of its patch text (UTF-8); only distinct resolved patches are
candidates; `gold_patch` is the task's reference. Problems are reported with
file, line and field, and nothing is silently dropped.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from grading.domain.reviews_file import read_reviews
from grading.grader.analysis.inputs import AnalysisInput, CandidatePatch
from grading.grader.analysis.views import Reader


class DevsetError(ValueError):
    """A groups or review file does not have the documented shape."""


@dataclass(frozen=True)
class Label:
    tier: int
    rank_in_tier: int


@dataclass(frozen=True)
class Task:
    instance_id: str
    repo: str
    base_commit: str
    problem_statement: str
    reference_patch: str
    test_patch: str
    test_names: tuple[str, ...]
    patches: dict[str, str]  # sha256 -> patch text (distinct resolved patches)
    submissions: dict[str, int]  # sha256 -> how many runs submitted it
    labels: dict[str, dict[str, Label]]  # rater -> sha256 -> label

    def analysis_input(
        self, *, reference: bool = True, read_base: Reader | None = None
    ) -> AnalysisInput:
        return AnalysisInput(
            candidates=[CandidatePatch(sha, text) for sha, text in sorted(self.patches.items())],
            reference_patch=self.reference_patch if reference else None,
            problem_statement=self.problem_statement,
            test_patch=self.test_patch,
            test_names=self.test_names,
            read_base=read_base,
        )


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _field(obj: Mapping[str, Any], name: str, kind: type, where: str) -> Any:
    if name not in obj:
        raise DevsetError(f"{where}: missing field {name!r}")
    value = obj[name]
    if not isinstance(value, kind):
        raise DevsetError(f"{where}: field {name!r} must be {kind.__name__}")
    return value


def _lines(path: Path) -> list[tuple[str, dict[str, Any]]]:
    out = []
    with path.open(encoding="utf-8") as fh:
        for n, line in enumerate(fh, 1):
            if not line.strip():
                continue
            where = f"{path}:{n}"
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as exc:
                raise DevsetError(f"{where}: malformed JSON ({exc.msg})") from exc
            if not isinstance(obj, dict):
                raise DevsetError(f"{where}: expected a JSON object")
            out.append((where, obj))
    return out


def load(folder: Path, *, reviewed_only: bool = True) -> list[Task]:
    """Tasks of `folder/groups.jsonl` with the labels of `folder/reviews/rater-*.jsonl`."""
    groups = {}
    for where, row in _lines(folder / "groups.jsonl"):
        iid = _field(row, "instance_id", str, where)
        patches: dict[str, str] = {}
        submissions: dict[str, int] = {}
        for i, cand in enumerate(_field(row, "candidates", list, where)):
            cwhere = f"{where}: candidates[{i}]"
            if not _field(cand, "resolved", bool, cwhere):
                continue
            text = _field(cand, "patch", str, cwhere)
            sha = sha256_text(text)
            patches[sha] = text
            submissions[sha] = submissions.get(sha, 0) + 1
        groups[iid] = (row, patches, submissions, where)
    labels: dict[str, dict[str, dict[str, Label]]] = {}
    for path in sorted((folder / "reviews").glob("rater-*.jsonl")):
        rater = path.stem
        # The reviews format has one parser, the importer's; its problems carry file and line.
        reviews, problems = read_reviews(path)
        if problems:
            raise DevsetError("\n".join(str(p) for p in problems))
        for review in reviews:
            where = f"{review.source}:{review.line}"
            if review.instance_id not in groups:
                raise DevsetError(
                    f"{where}: $.instance_id: {review.instance_id!r} is not in groups.jsonl"
                )
            patches = groups[review.instance_id][1]
            for cand in review.candidates:
                if cand.patch_sha256 not in patches:
                    raise DevsetError(
                        f"{where}: {cand.field}.patch_sha256: {cand.patch_sha256[:12]}… is no "
                        f"resolved patch of {review.instance_id}"
                    )
                # An unranked candidate shares rank 1 of its tier (the format allows it).
                label = Label(cand.tier, cand.rank_in_tier or 1)
                labels.setdefault(review.instance_id, {}).setdefault(rater, {})[
                    cand.patch_sha256
                ] = label
    tasks = []
    for iid, (row, patches, submissions, where) in groups.items():
        if reviewed_only and iid not in labels:
            continue
        tasks.append(
            Task(
                instance_id=iid,
                repo=_field(row, "repo", str, where),
                base_commit=_field(row, "base_commit", str, where),
                problem_statement=_field(row, "problem_statement", str, where),
                reference_patch=_field(row, "gold_patch", str, where),
                test_patch=_field(row, "test_patch", str, where),
                test_names=tuple(row.get("FAIL_TO_PASS", [])) + tuple(row.get("PASS_TO_PASS", [])),
                patches=patches,
                submissions=submissions,
                labels=labels.get(iid, {}),
            )
        )
    return tasks
