"""The grader's claims about the code as one reviewer may see them: after the reveal only,
named by the reviewer's own aliases, with opaque handles and the reviewer's marks."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from grading.models import Attempt, GraderRun
from review.claims import BASE, CRITERION_NAMES, Claim, code_claims
from review.models import Candidate, ClaimMark

SIDES = {"pre": "old", "post": "new"}


@dataclass(frozen=True)
class CandidateClaim:
    """One claim about one of the reviewer's candidates (`about`), placed on a diff."""

    claim: Claim
    handle: str  # what the browser sends back: opaque, per candidate
    about: Candidate
    # The candidate whose diff shows the cited lines (the judged one for base lines), or None
    # when the lines are in no candidate of this review.
    target: Candidate | None
    mark: str  # "" until marked

    @property
    def side(self) -> str:
        return SIDES[self.claim.side]

    @property
    def criterion_name(self) -> str:
        return CRITERION_NAMES.get(self.claim.criterion, self.claim.criterion)


def claim_handle(candidate: Candidate, claim_key: str) -> str:
    """An id for the browser: derived from the candidate's random token, so it names no
    attempt, run or evidence table entry, and differs between reviewers."""
    digest = hashlib.sha256(f"{candidate.token}\x00{claim_key}".encode()).hexdigest()
    return f"k{digest[:20]}"


def _judgements(run: GraderRun, wanted: set[int]) -> dict[str, dict[str, Any]]:
    verdict = run.verdict if isinstance(run.verdict, dict) else {}
    in_verdict = verdict.get("candidates") if isinstance(verdict.get("candidates"), dict) else {}
    out: dict[str, dict[str, Any]] = {}
    for grade in run.grades.all():
        if grade.attempt_id not in wanted:
            continue
        own = in_verdict.get(str(grade.attempt_id)) if isinstance(in_verdict, dict) else None
        out[str(grade.attempt_id)] = {
            "scores": grade.scores,
            "severe_issues": grade.severe_issues,
            "summary": grade.summary,
            "evidence": own.get("evidence") if isinstance(own, dict) else None,
        }
    return out


def candidate_claims(*, run: GraderRun, candidates: Sequence[Candidate]) -> list[CandidateClaim]:
    """Every `code` claim of `run` about these candidates (one assignment's), with marks.

    Two queries: the group's attempt → patch map (a grader that saw one of several identical
    patches cites that attempt) and the reviewer's marks. `run.grades` is expected prefetched.
    """
    by_attempt = {c.attempt_id: c for c in candidates}
    patch_of = dict(Attempt.objects.filter(group_id=run.group_id).values_list("pk", "patch_id"))
    by_patch = {patch_of.get(c.attempt_id): c for c in candidates if patch_of.get(c.attempt_id)}

    def candidate_of(key: str) -> Candidate | None:
        if not key.isdigit():
            return None
        pk = int(key)
        return by_attempt.get(pk) or by_patch.get(patch_of.get(pk))

    verdict = run.verdict if isinstance(run.verdict, dict) else {}
    evidence = verdict.get("evidence") if isinstance(verdict.get("evidence"), dict) else {}
    notes = verdict.get("reorder_notes") if isinstance(verdict.get("reorder_notes"), list) else []
    claims = code_claims(evidence or {}, _judgements(run, set(by_attempt)), notes or [])
    marks = {
        (m.candidate_id, m.claim_key): m.mark
        for m in ClaimMark.objects.filter(candidate__in=list(candidates), grader_run=run)
    }
    out = []
    for claim in claims:
        about = candidate_of(claim.about)
        if about is None:
            continue
        target = about if claim.target == BASE else candidate_of(claim.target)
        out.append(
            CandidateClaim(
                claim=claim,
                handle=claim_handle(about, claim.key),
                about=about,
                target=target,
                mark=marks.get((about.pk, claim.key), ""),
            )
        )
    return out
