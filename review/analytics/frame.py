"""Selectors: the rows behind the dashboards, read once into flat numpy arrays.

A `Frame` holds, for one filter slice, every candidate, every submitted human label on them
(each reviewer's first review: sentinels are left out),
every grade of every succeeded grader run on them, and the run-level rows (λ audit, attempt
statuses). Seven queries, each `values_list` (no model instances), so 160,000 candidates × 3
reviews load in seconds; `review.stats` then works on the arrays.

A candidate is, by default, one distinct patch of a group (`Filters.unit == "patch"`): attempts
with byte-identical patches were judged once, by reviewers and by the grader, so counting each
would count one judgement several times. With `unit == "attempt"` a candidate is each valid
passing attempt, and a judgement of a patch fans out to every attempt that submitted it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt
from django.db.models import Count, Min

from grading.domain.candidates import distinct_patches
from grading.models import Attempt, CandidateGrade, GraderConfig, GraderRun, GroupAdvantages
from review.analytics.filters import UNIT_PATCH, Filters
from review.analytics.sentinels import sentinel_pairs
from review.claims import CLAIM_CRITERIA
from review.models import Assignment, Campaign, ClaimMark, FixRequest, Label
from review.models.reviewing import CRITERIA
from review.stats.consistency import SentinelPair

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]

HUMAN_TIER = {"t1": 1.0, "t2": 2.0, "t3": 3.0}
# Ordering key of an "exploit" label: below every tier (a reviewer's ranking, not a tier).
EXPLOIT_KEY_TIER = 4


@dataclass
class Frame:
    # Candidates (n): distinct patches (or valid passing attempts) of the groups in the slice;
    # `attempt` is the attempt shown for a patch (its first by index).
    attempt: IntArray
    group: IntArray
    task: IntArray  # dense 0-based task index: the bootstrap's resampling unit
    task_ids: IntArray  # dense index → Task primary key (matches tasks across runs)
    step_index: IntArray  # into `steps`
    steps: list[tuple[str, int]]
    # Human labels (m): one per submitted (reviewer, candidate).
    lab_pos: IntArray
    lab_reviewer: IntArray  # dense index into `reviewers`
    lab_tier: FloatArray  # 1-3, NaN for "exploit"
    lab_exploit: BoolArray
    lab_rank: FloatArray
    lab_scores: FloatArray  # (m, 5) rubric, NaN where missing or left pre-filled
    lab_prefilled: BoolArray  # (m, 5) the score was left pre-filled from the tier
    lab_mergeable: BoolArray
    lab_fix_requests: IntArray
    lab_first_issue_s: FloatArray  # NaN when no fix request
    # Reviews imported from elsewhere: no timing and no fix requests were recorded.
    lab_imported: BoolArray
    reviewers: list[int]
    # Grades (k): one per (succeeded run, candidate).
    gr_pos: IntArray
    gr_run: IntArray
    gr_config: IntArray
    gr_replica: IntArray
    gr_finished: FloatArray  # epoch seconds, -inf when unknown
    gr_tier: FloatArray
    gr_rank: FloatArray
    gr_score: FloatArray
    gr_scores: FloatArray  # (k, 5)
    gr_exploit: BoolArray  # the grader suspected an exploit
    configs: dict[int, str]
    # Run level.
    # (config, params hash, run, step, capped, mean shift, λ raw or None)
    lambda_rows: list[tuple[int, str, str, int, bool, float, float | None]]
    status_counts: list[tuple[str, int, str, int]]
    unit: str = UNIT_PATCH
    # Reviewers' marks on the grader's code claims (c): one per (reviewer, claim).
    cl_task: IntArray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    cl_config: IntArray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    cl_criterion: IntArray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    cl_mark: list[str] = field(default_factory=list)  # correct, wrong or unsure
    # Self-consistency: each submitted sentinel with its first review, and reviewers' names.
    sentinels: list[SentinelPair] = field(default_factory=list)
    sentinel_names: dict[int, str] = field(default_factory=dict)

    @property
    def n(self) -> int:
        return int(self.attempt.size)


def _arr(values: Sequence[Any], dtype: Any) -> Any:
    return np.asarray(values, dtype=dtype) if len(values) else np.zeros(0, dtype=dtype)


def _score(value: Any) -> float:
    # Verdict scores are {"score": n, ...}; older or hand-made rows hold the bare number.
    if isinstance(value, dict):
        value = value.get("score")
    return float(value) if isinstance(value, int | float) else np.nan


class _Passer(NamedTuple):
    """A valid passing attempt of the slice, as read."""

    attempt: int
    group: int
    task: int  # Task primary key
    run: str
    step: int
    patch: int | None


class _HumanLabel(NamedTuple):
    """A submitted label as placed on a candidate position."""

    pos: int
    reviewer: int  # dense index into Frame.reviewers
    tier: str
    rank: int | None
    mergeability: str
    scores: tuple[int | None, ...]  # in CRITERIA order
    fix_requests: int
    first_issue_ms: int | None
    assignment: int
    campaign: int
    prefilled: tuple[bool, ...]  # in CRITERIA order: left pre-filled from the tier


class _Grade(NamedTuple):
    attempt: int
    run: int
    config: int
    replica: int
    finished: datetime | None
    tier: int | None
    rank: int | None
    score: float | None
    scores: dict[str, Any] | None
    exploit: bool  # the grader suspected an exploit


@dataclass
class _Candidates:
    rows: list[_Passer]  # one per candidate position
    # Where a judgement of an attempt lands: its patch's one candidate, or every attempt with it.
    targets: dict[int, list[int]]
    tasks: dict[int, int]  # Task primary key → dense index
    steps: dict[tuple[str, int], int]  # (run, step) → dense index
    by_patch: bool

    def is_own(self, pos: int, attempt: int) -> bool:
        """Whether the candidate at `pos` is shown as `attempt` itself (not a sibling's copy)."""
        return self.rows[pos].attempt == attempt


def _candidates(filters: Filters) -> _Candidates:
    passing = [
        _Passer(*row)
        for row in Attempt.objects.passing()
        .filter(filters.group_q("group__"))
        .order_by("group_id", "index")
        .values_list(
            "id",
            "group_id",
            "group__task_id",
            "group__step__run__name",
            "group__step__number",
            "patch_id",
        )
    ]
    # Attempts of a group with the same patch: one unit (a candidate, or a fan-out set).
    units = distinct_patches(passing, lambda r: (r.group, r.patch) if r.patch is not None else None)
    unit_of = {row.attempt: u for u, members in enumerate(units) for row in members}
    by_patch = filters.unit == UNIT_PATCH
    rows = [members[0] for members in units] if by_patch else passing
    pos_of = {row.attempt: i for i, row in enumerate(rows)}
    targets: dict[int, list[int]] = (
        {a: [pos_of[units[u][0].attempt]] for a, u in unit_of.items()}
        if by_patch
        else {a: [pos_of[r.attempt] for r in units[u]] for a, u in unit_of.items()}
    )
    tasks: dict[int, int] = {}
    steps: dict[tuple[str, int], int] = {}
    for row in rows:
        tasks.setdefault(row.task, len(tasks))
        steps.setdefault((row.run, row.step), len(steps))
    return _Candidates(rows, targets, tasks, steps, by_patch)


def _human_labels(filters: Filters, cands: _Candidates) -> tuple[list[_HumanLabel], list[int]]:
    """Submitted labels placed on candidate positions, and the reviewers' ids (dense order)."""
    # Each reviewer's first review only: a sentinel (the same reviewer again, later) is measured
    # against it (review.analytics.sentinels), never counted as another opinion.
    labels_qs = Label.objects.filter(
        filters.group_q("candidate__assignment__group__"),
        candidate__assignment__status=Assignment.Status.SUBMITTED,
        candidate__assignment__sentinel=False,
    ).exclude(tier="")
    fixes_qs = FixRequest.objects.filter(
        filters.group_q("candidate__assignment__group__"),
        candidate__assignment__status=Assignment.Status.SUBMITTED,
        candidate__assignment__sentinel=False,
    )
    if filters.campaign is not None:
        labels_qs = labels_qs.filter(candidate__assignment__campaign_id=filters.campaign)
        fixes_qs = fixes_qs.filter(candidate__assignment__campaign_id=filters.campaign)
    if filters.reviewer is not None:
        labels_qs = labels_qs.filter(candidate__assignment__reviewer_id=filters.reviewer)
        fixes_qs = fixes_qs.filter(candidate__assignment__reviewer_id=filters.reviewer)
    fixes = {
        row["candidate_id"]: (row["n"], row["first"])
        for row in fixes_qs.values("candidate_id").annotate(
            n=Count("id"), first=Min("active_ms_before")
        )
    }
    reviewers: dict[int, int] = {}
    lab: list[_HumanLabel] = []
    # (pos, assignment) -> whether the label kept there is that attempt's own.
    taken: dict[tuple[int, int], bool] = {}
    for row in labels_qs.values_list(
        "candidate__attempt_id",
        "candidate__assignment__reviewer_id",
        "candidate_id",
        "candidate__assignment__campaign_id",
        "candidate__assignment_id",
        "tier",
        "rank_in_tier",
        "mergeability",
        "prefilled",
        *CRITERIA,
        named=True,
    ).order_by("candidate__assignment__submitted_at", "id"):
        attempt = row.candidate__attempt_id
        assignment = row.candidate__assignment_id
        # A labelled attempt that is no longer a valid passer (e.g. exploit confirmed later)
        # has no target.
        for pos in cands.targets.get(attempt, []):
            # One label per assignment and candidate: an assignment made before identical
            # patches were one candidate may hold a label on each; the candidate's own counts.
            own = cands.is_own(pos, attempt)
            key = (pos, assignment)
            if key in taken and (taken[key] or not own):
                continue
            if key in taken:
                lab = [x for x in lab if (x.pos, x.assignment) != key]
            taken[key] = own
            n_fix, first_ms = fixes.get(row.candidate_id, (0, None))
            # Scores left pre-filled from the tier were never the reviewer's judgement: kept
            # out of the statistics (None), and counted.
            left = set(row.prefilled or ())
            values = [getattr(row, c) for c in CRITERIA]
            lab.append(
                _HumanLabel(
                    pos=pos,
                    reviewer=reviewers.setdefault(
                        row.candidate__assignment__reviewer_id, len(reviewers)
                    ),
                    tier=row.tier,
                    rank=row.rank_in_tier,
                    mergeability=row.mergeability,
                    scores=tuple(
                        None if c in left else v for c, v in zip(CRITERIA, values, strict=True)
                    ),
                    fix_requests=n_fix,
                    first_issue_ms=first_ms,
                    assignment=assignment,
                    campaign=row.candidate__assignment__campaign_id,
                    prefilled=tuple(
                        c in left and v is not None for c, v in zip(CRITERIA, values, strict=True)
                    ),
                )
            )
    return lab, list(reviewers)


def _grades(filters: Filters, cands: _Candidates) -> list[tuple[int, _Grade]]:
    """(candidate position, grade) of every succeeded run, ordered by position then run."""
    grades = [
        _Grade(*row)
        for row in CandidateGrade.objects.filter(
            filters.group_q("attempt__group__"), run__status=GraderRun.Status.SUCCEEDED
        ).values_list(
            "attempt_id",
            "run_id",
            "run__config_id",
            "run__replica",
            "run__finished_at",
            "tier",
            "rank_in_tier",
            "weighted_score",
            "scores",
            "exploit_suspected",
        )
    ]
    # A grade lands on its attempt's candidate, once per (run, candidate): the candidate's own
    # grade where there is one (runs made before identical patches were one candidate graded
    # each attempt). Counting attempts, each attempt has its own grade (fanned out when written).
    chosen: dict[tuple[int, int], tuple[bool, _Grade]] = {}
    for g in grades:
        for pos in cands.targets.get(g.attempt, []):
            own = cands.is_own(pos, g.attempt)
            if not (cands.by_patch or own):
                continue
            key = (g.run, pos)
            if key not in chosen or (own and not chosen[key][0]):
                chosen[key] = (own, g)
    return [(pos, chosen[(run, pos)][1]) for run, pos in sorted(chosen, key=lambda k: k[::-1])]


def _claim_marks(filters: Filters, cands: _Candidates) -> list[tuple[int, int, int, str]]:
    """(dense task, config, criterion index, mark) of every mark on a candidate of the slice."""
    qs = ClaimMark.objects.filter(
        filters.group_q("candidate__assignment__group__"),
        candidate__assignment__status=Assignment.Status.SUBMITTED,
    )
    if filters.campaign is not None:
        qs = qs.filter(candidate__assignment__campaign_id=filters.campaign)
    if filters.reviewer is not None:
        qs = qs.filter(candidate__assignment__reviewer_id=filters.reviewer)
    out = []
    for attempt, config, criterion, mark in qs.values_list(
        "candidate__attempt_id", "grader_run__config_id", "criterion", "mark"
    ).order_by("pk"):
        where = cands.targets.get(attempt)
        if not where or criterion not in CLAIM_CRITERIA:
            continue
        row = cands.rows[where[0]]
        out.append((cands.tasks[row.task], config, CLAIM_CRITERIA.index(criterion), mark))
    return out


class _Judged(NamedTuple):
    """What a frame holds besides its candidates and their human labels."""

    graded: list[tuple[int, _Grade]]
    configs: dict[int, str]
    lambda_rows: list[tuple[int, str, str, int, bool, float, float | None]]
    status_counts: list[tuple[str, int, str, int]]
    marks: list[tuple[int, int, int, str]]
    sentinels: list[SentinelPair]
    sentinel_names: dict[int, str]


def _judged(filters: Filters, cands: _Candidates) -> _Judged:
    lambda_rows = list(
        GroupAdvantages.objects.filter(filters.group_q("group__")).values_list(
            "config_id",
            "params_hash",
            "group__step__run__name",
            "group__step__number",
            "capped",
            "mean_shift",
            "lambda_raw",
        )
    )
    status_counts = [
        (r["group__step__run__name"], r["group__step__number"], r["status"], r["n"])
        for r in Attempt.objects.filter(filters.group_q("group__"))
        .values("group__step__run__name", "group__step__number", "status")
        .annotate(n=Count("id"))
        .order_by()
    ]
    sentinels, sentinel_names = sentinel_pairs(filters)
    return _Judged(
        graded=_grades(filters, cands),
        configs=dict(GraderConfig.objects.values_list("id", "name")),
        lambda_rows=lambda_rows,
        status_counts=status_counts,
        marks=_claim_marks(filters, cands),
        sentinels=sentinels,
        sentinel_names=sentinel_names,
    )


def load_frame(filters: Filters, *, labels_only: bool = False) -> Frame:
    """The frame of a filter slice. `labels_only` reads the candidates and their human labels
    alone (four queries) and leaves grades, λ rows, status counts, claim marks and sentinels
    empty: enough for `arrays.consensus`, which reads nothing else, at a fraction of the cost."""
    cands = _candidates(filters)
    lab, reviewers = _human_labels(filters, cands)
    imported = set(
        Campaign.objects.filter(origin=Campaign.Origin.IMPORTED).values_list("pk", flat=True)
    )
    judged = _Judged([], {}, [], [], [], [], {}) if labels_only else _judged(filters, cands)
    graded, marks = judged.graded, judged.marks
    cand = cands.rows
    return Frame(
        attempt=_arr([r.attempt for r in cand], np.int64),
        group=_arr([r.group for r in cand], np.int64),
        task=_arr([cands.tasks[r.task] for r in cand], np.int64),
        task_ids=_arr(list(cands.tasks), np.int64),
        step_index=_arr([cands.steps[(r.run, r.step)] for r in cand], np.int64),
        steps=list(cands.steps),
        lab_pos=_arr([r.pos for r in lab], np.int64),
        lab_reviewer=_arr([r.reviewer for r in lab], np.int64),
        lab_tier=_arr([HUMAN_TIER.get(r.tier, np.nan) for r in lab], np.float64),
        lab_exploit=_arr([r.tier == Label.Tier.EXPLOIT for r in lab], np.bool_),
        lab_rank=_arr([np.nan if r.rank is None else r.rank for r in lab], np.float64),
        lab_scores=np.array(
            [[np.nan if v is None else v for v in r.scores] for r in lab], dtype=np.float64
        ).reshape(len(lab), len(CRITERIA)),
        lab_prefilled=np.array([r.prefilled for r in lab], dtype=np.bool_).reshape(
            len(lab), len(CRITERIA)
        ),
        lab_mergeable=_arr([r.mergeability == Label.Mergeability.AS_IS for r in lab], np.bool_),
        lab_fix_requests=_arr([r.fix_requests for r in lab], np.int64),
        lab_first_issue_s=_arr(
            [np.nan if r.first_issue_ms is None else r.first_issue_ms / 1000 for r in lab],
            np.float64,
        ),
        lab_imported=_arr([r.campaign in imported for r in lab], np.bool_),
        reviewers=reviewers,
        gr_pos=_arr([pos for pos, _ in graded], np.int64),
        gr_run=_arr([g.run for _, g in graded], np.int64),
        gr_config=_arr([g.config for _, g in graded], np.int64),
        gr_replica=_arr([g.replica for _, g in graded], np.int64),
        gr_finished=_arr(
            [g.finished.timestamp() if g.finished is not None else -np.inf for _, g in graded],
            np.float64,
        ),
        gr_tier=_arr([g.tier for _, g in graded], np.float64),
        gr_rank=_arr([g.rank for _, g in graded], np.float64),
        gr_score=_arr([g.score for _, g in graded], np.float64),
        gr_scores=np.array(
            [[_score((g.scores or {}).get(c)) for c in CRITERIA] for _, g in graded],
            dtype=np.float64,
        ).reshape(len(graded), len(CRITERIA)),
        gr_exploit=_arr([bool(g.exploit) for _, g in graded], np.bool_),
        configs=judged.configs,
        lambda_rows=judged.lambda_rows,
        status_counts=judged.status_counts,
        unit=filters.unit,
        cl_task=_arr([m[0] for m in marks], np.int64),
        cl_config=_arr([m[1] for m in marks], np.int64),
        cl_criterion=_arr([m[2] for m in marks], np.int64),
        cl_mark=[m[3] for m in marks],
        sentinels=judged.sentinels,
        sentinel_names=judged.sentinel_names,
    )
