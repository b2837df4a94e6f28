"""Page contexts: the selectors' rows plus blinded content, shaped for templates.

Nothing here writes. The review page is built from one `assignment_for_reviewer` read, one
fingerprint read, and cached renderings, so its query count does not grow with candidates.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from django.core.cache import cache
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils.html import escape
from django.utils.safestring import mark_safe

from grading.domain.redaction import Redactor
from grading.models import CandidateGrade, GraderRun, Patch, Task
from grading.selectors.synthetic import run_is_synthetic
from review.blinded_cache import (
    CACHE_SECONDS,
    HunkShare,
    assignment_redactor,
    patch_key,
    rendered_diffs,
    shared_hunks,
    shared_key,
    test_results,
)
from review.diffs import RenderedFile, file_id_for
from review.markdown import markdown_html
from review.models import (
    Assignment,
    Campaign,
    Candidate,
    ClaimMark,
    Disagreement,
    FixRequest,
    Label,
)
from review.models.reviewing import CRITERIA
from review.selectors.claims import candidate_claims
from review.selectors.reviewing import open_slots
from review.services.reveal import revealed_run
from review.templatetags.review_tags import TIER_SHORT

CRITERIA_LABELS = [(c, c.replace("_", " ").capitalize()) for c in CRITERIA]
TIERS = {"t1": 1, "t2": 2, "t3": 3}
# Bump when _candidate_side.html or _candidate_main.html change, so cached fragments expire.
FRAGMENT_VERSION = "6"
MARKDOWN_MAX_CHARS = 50_000


@dataclass
class CandidatePanel:
    alias: str
    token: str
    side_html: str
    # The diffs, UTF-8 encoded: the largest part of the page, spliced in by the view (see
    # views.pages.page) rather than copied through every level of template rendering.
    main_bytes: bytes
    paths: list[str]
    label: Label | None
    fix_requests: list[FixRequest]
    tests: dict[str, Any] | None
    trajectory_events: int
    active_ms: int
    added: int = 0
    removed: int = 0
    reveal: dict[str, Any] | None = None
    scores: list[tuple[str, str, int | None]] = field(default_factory=list)
    viewed: list[str] = field(default_factory=list)  # file ids the reviewer ticked as viewed
    prefilled: list[str] = field(default_factory=list)  # criteria still pre-filled from the tier
    main_html: str = ""  # a marker the view replaces with main_bytes
    # Whether the diff, file list and test output are in this panel (the active candidate's,
    # or a panel fragment); the others' come on demand (views.pages.panel).
    loaded: bool = False

    @property
    def label_base(self) -> str:
        """The stored label this page's form is filled from (when it was last saved, "" for
        none yet): a save sends it back, and one made from a page another tab or window has
        since saved over is refused (services.reviewing.label_save) instead of writing the
        page's stale form over the newer label."""
        return self.label.updated_at.isoformat() if self.label else ""

    def label_state(self) -> dict[str, Any]:
        """The label as the page's one label form shows it, for the page script. Free text (the
        notes) stays out of this JSON: it comes escaped in the candidate's panel."""
        label = self.label
        state: dict[str, Any] = {
            "tier": label.tier if label else "",
            "rank_in_tier": label.rank_in_tier if label else None,
            "mergeability": label.mergeability if label else "",
            "confidence": label.confidence if label else None,
            "prefilled": ",".join(self.prefilled),
            "based_on": self.label_base,
        }
        for key, _name, value in self.scores:
            state[key] = value
        return state


@dataclass
class _Content:
    """What the cached fragments are rendered from."""

    files: list[RenderedFile]
    shares: list[HunkShare]

    @property
    def unique_hunks(self) -> int:
        return sum(1 for s in self.shares if s.unique)

    @property
    def common_hunks(self) -> int:
        return sum(1 for s in self.shares if s.common)

    @property
    def some_hunks(self) -> int:
        """Hunks another candidate made too, but not most of them (a "2/8" badge): counted
        apart so the summary adds up to the badges beside it."""
        return len(self.shares) - self.common_hunks - self.unique_hunks


def _digest(*parts: str) -> str:
    return hashlib.sha256(":".join(parts).encode()).hexdigest()


def candidate_fragments(
    *,
    patches: dict[str, Patch | None],
    redactor: Redactor,
    task: Task,
    wanted: set[str] | None = None,
) -> dict[str, dict[str, Any]]:
    """Per candidate token: the file list + shared hunks and the diffs, as cached HTML.

    Rendering thousands of rows and hunk badges through templates costs more than reading
    them back, so the reviewer-independent parts of a panel are cached whole, keyed by the
    patch's render key (content hash + options + renderer version + redaction + base tree),
    the group's shared-changes key and this template version. The only per-assignment value
    inside, the file-page URL, is a placeholder filled in per request. Only the `wanted`
    candidates' fragments are read or rendered (all by default); the group's shared changes
    are computed over every candidate either way.
    """
    group_key = shared_key(patches=patches, redactor=redactor)
    keys = {
        tok: f"gagar-panel:v{FRAGMENT_VERSION}:" + _digest(patch_key(p, redactor, task), group_key)
        if p is not None
        else f"gagar-panel:v{FRAGMENT_VERSION}:" + _digest("-", group_key)
        for tok, p in patches.items()
        if wanted is None or tok in wanted
    }
    found = cache.get_many(list(set(keys.values())))
    missing = [tok for tok, key in keys.items() if key not in found]
    if missing:
        diffs = rendered_diffs(
            patches={tok: patches[tok] for tok in missing}, redactor=redactor, task=task
        )
        shares = shared_hunks(patches=patches, redactor=redactor, only=missing)
        fresh = {}
        for tok in missing:
            files = diffs.get(tok, [])
            content = {"p": _Content(files, shares.get(tok, [])), "total": len(patches)}
            fresh[keys[tok]] = {
                "side": render_to_string("review/_candidate_side.html", content),
                "main": render_to_string("review/_candidate_main.html", content).encode(),
                "paths": [f.path for f in files],
                "added": sum(f.added for f in files),
                "removed": sum(f.removed for f in files),
            }
        cache.set_many(fresh, CACHE_SECONDS)
        found.update(fresh)
    return {tok: found[key] for tok, key in keys.items()}


def review_page(*, assignment: Assignment, active: str | None = None) -> dict[str, Any]:
    """The page's context. `active` (a candidate alias) is the candidate whose diff, files and
    test output come with the page (the first by default); the other panels are shells the page
    script fills from `views.pages.panel`."""
    campaign = assignment.campaign
    redactor = assignment_redactor(assignment=assignment)
    candidates: list[Candidate] = list(assignment.candidates.all())
    if not candidates:
        raise ValueError("an assignment without candidates")
    current = next((c for c in candidates if c.alias == active), candidates[0])
    context = candidate_context(
        assignment=assignment, candidates=candidates, loaded={current.token}, redactor=redactor
    )
    panels = context["panels"]
    task = assignment.group.task
    reference = None
    # The maintainers' fix anchors reviewers on one way of solving the problem: shown only
    # when the campaign turned it on (off by default).
    if campaign.show_reference and task.gold_patch_id is not None:
        reference = rendered_diffs(
            patches={"reference": task.gold_patch}, redactor=redactor, task=task
        )["reference"]
    statement = redactor(task.problem_statement)
    return context | {
        "active": next(p for p in panels if p.token == current.token),
        "recorded": recorded_summary(assignment=assignment, panels=panels),
        # Markdown with raw HTML off: every tag of the untrusted text is escaped, not parsed.
        # A huge statement stays preformatted text: Chromium takes tens of seconds to lay out
        # a megabyte of proportional-font paragraphs.
        "problem_statement_html": mark_safe(markdown_html(statement))  # noqa: S308
        if len(statement) <= MARKDOWN_MAX_CHARS
        else None,
        "reference": reference,
        # The group is demo data (grading.selectors.synthetic): said on the page, nothing more.
        "synthetic": run_is_synthetic(assignment.group.step.run),
    }


def candidate_context(
    *,
    assignment: Assignment,
    candidates: list[Candidate],
    loaded: set[str],
    redactor: Redactor | None = None,
) -> dict[str, Any]:
    """Every candidate's panel, with the heavy parts (diffs, files, test output) only for the
    `loaded` tokens."""
    campaign = assignment.campaign
    redactor = redactor or assignment_redactor(assignment=assignment)
    patches = {c.token: c.attempt.patch for c in candidates}
    fragments = candidate_fragments(
        patches=patches, redactor=redactor, task=assignment.group.task, wanted=loaded
    )
    empty = {"side": "", "main": b"", "paths": [], "added": 0, "removed": 0}
    panels = []
    for c in candidates:
        label = getattr(c, "label", None)
        trajectory = getattr(c.attempt, "trajectory", None)
        frag = fragments.get(c.token, empty)
        main: bytes = frag["main"]
        if b"@@FILE_URL@@" in main:
            url = escape(reverse("review:file", args=[assignment.pk, c.token]))
            main = main.replace(b"@@FILE_URL@@", url.encode())
        panels.append(
            CandidatePanel(
                alias=c.alias,
                token=c.token,
                # Our own templates' output, escaped when it was rendered.
                side_html=mark_safe(frag["side"]),  # noqa: S308
                main_bytes=main,
                paths=frag["paths"],
                label=label,
                fix_requests=list(c.fix_requests.all()),
                tests=test_results(attempt=c.attempt, redactor=redactor)
                if campaign.show_test_output and c.token in loaded
                else None,
                trajectory_events=trajectory.event_count
                if trajectory is not None and campaign.show_trajectories
                else 0,
                active_ms=c.active_ms,
                added=frag["added"],
                removed=frag["removed"],
                scores=[
                    (k, name, getattr(label, k) if label else None) for k, name in CRITERIA_LABELS
                ],
                viewed=[file_id_for(p) for p in c.viewed_paths],
                prefilled=list(label.prefilled) if label else [],
                loaded=c.token in loaded,
            )
        )
    reveal = reveal_for(assignment=assignment, candidates=candidates, redactor=redactor)
    if reveal:
        for panel in panels:
            panel.reveal = reveal.get(panel.token)
    return {
        "assignment": assignment,
        "campaign": campaign,
        "panels": panels,
        "revealed": bool(reveal),
        "criteria": CRITERIA_LABELS,
        "tiers": Label.Tier.choices,
        "mergeabilities": Label.Mergeability.choices,
        "severities": FixRequest.Severity.choices,
    }


def recorded_summary(
    *, assignment: Assignment, panels: list[CandidatePanel]
) -> dict[str, Any] | None:
    """After Submit: what was recorded (tiers, fix requests, active time) and whether another
    group is waiting, for the end-of-review card. None while the review is open."""
    if assignment.status != Assignment.Status.SUBMITTED:
        return None
    tiers = Counter(p.label.tier for p in panels if p.label and p.label.tier)
    fixes = [f for p in panels for f in p.fix_requests]
    return {
        "submitted_at": assignment.submitted_at,
        "active_ms": assignment.active_ms,
        "candidates": len(panels),
        "tiers": [(TIER_SHORT[t], tiers[t]) for t in TIER_SHORT if tiers[t]],
        "fix_requests": len(fixes),
        "blocking": sum(1 for f in fixes if f.severity == FixRequest.Severity.BLOCKING),
        "more": assignment.campaign.status == Campaign.Status.ACTIVE
        and open_slots(campaign=assignment.campaign, reviewer=assignment.reviewer) > 0,
    }


def reveal_for(
    *, assignment: Assignment, candidates: list[Candidate], redactor: Redactor
) -> dict[str, dict[str, Any]] | None:
    """The grader's verdict per candidate token, only after submission and only if allowed."""
    run = revealed_run(assignment=assignment)
    if run is None:
        return None
    alias_of = {c.attempt_id: c.alias for c in candidates}
    grades = {g.attempt_id: g for g in run.grades.all()}
    flags = {
        d.candidate_id: d
        for d in Disagreement.objects.filter(candidate__in=candidates, grader_run=run)
    }
    claims = claims_by_candidate(run=run, candidates=candidates, redactor=redactor)
    out: dict[str, dict[str, Any]] = {}
    for c in candidates:
        grade = grades.get(c.attempt_id)
        label = getattr(c, "label", None)
        if grade is None:
            out[c.token] = {"graded": False}
            continue
        human = TIERS.get(label.tier) if label else None
        summary = grade_summary(grade, run, alias_of, redactor)
        # The reviewer's own label beside the verdict, so the comparison needs no scrolling.
        yours = [getattr(label, key) if label else None for key, _ in CRITERIA_LABELS]
        out[c.token] = summary | {
            "mine": (TIER_SHORT.get(label.tier, "") if label else "")
            + (f" #{label.rank_in_tier}" if label and label.rank_in_tier else ""),
            "score_rows": [
                (name, score, mine, why)
                for (name, score, why), mine in zip(summary["scores"], yours, strict=True)
            ],
            "disagrees": human != grade.tier,
            # The reviewer's own flag, shown in place of the form (one flag per verdict).
            "flag": flags.get(c.pk),
            # The grader's claims about this candidate's code, to mark (review/_claims.html).
            "claims": claims.get(c.token, []),
            "claim_marks": ClaimMark.Mark.choices,
        }
    return out


def claims_by_candidate(
    *, run: GraderRun, candidates: list[Candidate], redactor: Redactor
) -> dict[str, list[dict[str, Any]]]:
    """The grader's `code` claims per judged candidate's token, redacted like the diffs (so a
    cited path matches the path the diff shows), candidates named by the reviewer's aliases."""
    out: dict[str, list[dict[str, Any]]] = {}
    for cc in candidate_claims(run=run, candidates=candidates):
        claim = cc.claim
        out.setdefault(cc.about.token, []).append(
            {
                "handle": cc.handle,
                "criterion": claim.criterion,
                "criterion_name": cc.criterion_name,
                "score": claim.score,
                "category": redactor(claim.category),
                "text": redactor(claim.text),
                "path": redactor(claim.path),
                "line_start": claim.line_start,
                "line_end": claim.line_end,
                "side": cc.side,
                "target_token": cc.target.token if cc.target is not None else "",
                "target_alias": cc.target.alias if cc.target is not None else "",
                "mark": cc.mark,
            }
        )
    return out


def grade_summary(
    grade: CandidateGrade, run: GraderRun, alias_of: dict[int, str], redactor: Redactor
) -> dict[str, Any]:
    """The grader's verdict on one attempt, with candidates named by alias and text redacted."""
    return {
        "graded": True,
        "tier": grade.tier,
        "rank": grade.rank_in_tier,
        "weighted_score": grade.weighted_score,
        "scores": _scores(grade.scores, redactor),
        "severe_issues": [_issue(i, run, alias_of, redactor) for i in (grade.severe_issues or [])],
        "summary": redactor(grade.summary),
        "exploit_suspected": grade.exploit_suspected,
    }


def _scores(scores: Any, redactor: Redactor) -> list[tuple[str, Any, str]]:
    rows = []
    for key, label in CRITERIA_LABELS:
        value = scores.get(key) if isinstance(scores, dict) else None
        if isinstance(value, dict):
            rows.append((label, value.get("score"), redactor(str(value.get("rationale") or ""))))
        else:
            rows.append((label, value, ""))
    return rows


def _issue(
    issue: Any, run: GraderRun, alias_of: dict[int, str], redactor: Redactor
) -> dict[str, Any]:
    if not isinstance(issue, dict):
        return {"category": "other", "description": redactor(str(issue)), "evidence": []}
    table = (run.verdict or {}).get("evidence", {}) if isinstance(run.verdict, dict) else {}
    evidence = []
    for ev_id in issue.get("evidence") or []:
        ev = table.get(ev_id) if isinstance(table, dict) else None
        if isinstance(ev, dict):
            evidence.append(_evidence_text(ev, alias_of, redactor))
    return {
        "category": redactor(str(issue.get("category", "other"))),
        "description": redactor(str(issue.get("description", ""))),
        "evidence": evidence,
    }


def _evidence_text(ev: dict[str, Any], alias_of: dict[int, str], redactor: Redactor) -> str:
    # The grader names candidates by attempt key; show the reviewer's own alias instead.
    cand = str(ev.get("candidate", ""))
    who = alias_of.get(int(cand), "another candidate") if cand.isdigit() else cand
    kind = ev.get("type")
    if kind == "code":
        where = f"{ev.get('path')}:{ev.get('line_start')}–{ev.get('line_end')} ({ev.get('side')})"
        return redactor(f"code in {who}: {where}")
    if kind == "trajectory":
        return redactor(f"trajectory of {who}, event {ev.get('event_index')}")
    if kind == "execution":
        return redactor(f"ran `{ev.get('command')}` in {who}: exit {ev.get('exit_code')}")
    return redactor(str(ev))
