"""The demo's review side (`manage.py demo`): the campaign a first run opens for the demo
reviewers, and the synthetic study that `manage.py demo --study` adds.

The study is dealt from the project's own sample group (`grading/sample/`, real attempts with
real patches, trajectories and test output): several copies of its task, several training steps,
each group a different hand of its attempts (later steps hold more good ones, as a run that
learns would). Two synthetic grader configurations grade every group and three synthetic
reviewers (accounts that cannot log in) submit tiers, ranks, rubric scores, fix requests anchored
to real diff lines, mergeability and active times, each drawn from a seeded model of that
grader or reviewer around the attempt's designed quality. Advantages are stored for both
configurations. Everything hangs off one run whose metadata says `synthetic`
(grading.selectors.synthetic), so pages badge it and exports say so.

Graders are modelled rather than run: the offline grader takes seconds per group and the study
must build in seconds. Their verdicts pass the `gagar.verdict.v1` schema all the same.
"""

from __future__ import annotations

import math
import random
import secrets
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.models import User
from django.db import transaction
from django.utils import timezone

from grading.diffs import parse_patch
from grading.domain.bundle import group_from_object
from grading.domain.candidates import distinct_patches
from grading.grader.inputs import Rubric
from grading.grader.verdict import SCHEMA_ID, map_aliases, schema_errors
from grading.models import (
    Attempt,
    CandidateGrade,
    GraderConfig,
    GraderRun,
    Group,
    GroupAdvantages,
    Run,
    Task,
)
from grading.sample.build import load_committed_group
from grading.selectors.synthetic import SYNTHETIC_KEY, SYNTHETIC_NOTE
from grading.services.advantages import group_advantages_refresh
from grading.services.data_version import data_changed
from grading.services.demo import SAMPLE_RUN, sample_repo_path
from grading.services.imports import groups_import
from review.blinding import draw_order, draw_order_unlike
from review.models import Assignment, Campaign, CampaignGroup, Candidate, FixRequest, Label
from review.models.reviewing import CRITERIA, TIER_TYPICAL_SCORES
from review.sentinels import MIN_GAP, SubmittedGroup, sentinel_pick
from review.services.campaigns import campaign_create

DEMO_CAMPAIGN = "Demo: the sample group"
STUDY_RUN = "synthetic-study"
STUDY_CAMPAIGN = "Synthetic study (demo --study)"
# Bumped when the study's recipe changes: an older study is then replaced, not kept.
STUDY_VERSION = 3
STUDY_TASKS = 5
STUDY_STEPS = (1, 2, 3, 4)
STUDY_SEED = 17
# A quarter of each reviewer's groups come back to them later as self-consistency sentinels
# (review.sentinels), so the dashboards' sentinel table has data; the demo reviewers, who also
# review in the study's campaign, get theirs from the queue at the same rate.
STUDY_SENTINEL_RATE = 0.25

# What each passing sample attempt is (grading/sample/attempts.py): the tier a careful reviewer
# gives it, a quality in [0, 1] that orders it within its tier, and its typical rubric scores.
TRUTH: dict[str, tuple[str, float, tuple[int, ...]]] = {
    "a1": ("t1", 0.95, (5, 5, 5, 5, 5)),
    "a2": ("t1", 0.90, (5, 5, 4, 5, 4)),
    "a3": ("t1", 1.00, (5, 5, 4, 5, 5)),
    "a4": ("t3", 0.30, (3, 3, 1, 2, 2)),
    "a5": ("exploit", 0.05, (1, 1, 3, 2, 2)),
    "a6": ("exploit", 0.00, (1, 2, 3, 1, 2)),
    "a7": ("t3", 0.35, (3, 2, 4, 1, 4)),
    "a8": ("t2", 0.60, (4, 4, 3, 4, 3)),
}
FAILING = ("a9", "a10", "a11")
INFRA = "a12"
TIERS = ("t1", "t2", "t3")


@dataclass(frozen=True)
class Rater:
    """A reviewer's or grader's habits: how often their tier moves from the truth and which
    way, how often they spot an exploit, how noisy their scores are."""

    name: str
    slip: float  # chance the tier moves one step
    bias: int  # +1 moves to a worse tier, -1 to a better one, 0 either way
    spots_exploit: float
    score_noise: float  # chance a criterion's score moves by one
    speed: float = 1.0  # seconds multiplier (reviewers)
    leaves_prefilled: float = 0.0  # chance a label's rubric is left as the tier pre-filled it
    coverage: float = 1.0  # share of the groups they review
    fix_rate: float = 1.0  # fix requests multiplier


REVIEWERS = (
    Rater("synthetic-careful", 0.15, 0, 0.95, 0.3, speed=1.6, fix_rate=1.4),
    Rater("synthetic-quick", 0.35, -1, 0.55, 0.5, speed=0.6, coverage=0.8, fix_rate=0.6),
    Rater("synthetic-strict", 0.35, +1, 0.85, 0.4, leaves_prefilled=0.35, coverage=0.75),
)
GRADERS = (
    (
        Rater("synthetic: careful grader", 0.2, 0, 0.9, 0.35),
        {"model": "synthetic-careful-v1", "temperature": 0.0},
    ),
    (
        Rater("synthetic: hasty grader", 0.45, -1, 0.5, 0.55),
        {"model": "synthetic-hasty-v1", "temperature": 0.8},
    ),
)
FIX_TEXTS = {
    "t2": ["Keep the change to the helper; the extra branch is not needed.", "Name this clearly."],
    "t3": [
        "This rewrites more than the bug needs; keep the fix to the comparison.",
        "Output changes for values that were right before.",
        "This file is unrelated to the bug.",
    ],
    "exploit": [
        "This special-cases the tested values instead of fixing the rounding.",
        "The tests were changed to match the bug: revert them.",
    ],
}


@dataclass(frozen=True)
class StudyReport:
    created: bool
    groups: int
    reviews: int
    labels: int
    grader_runs: int
    advantages: int
    sentinels: int = 0

    def summary(self) -> str:
        if not self.created:
            return f"synthetic study already present ({self.groups} groups): nothing to do"
        return (
            f"synthetic study: {self.groups} groups in {len(STUDY_STEPS)} steps, "
            f"{self.grader_runs} grader runs, {self.reviews} reviews and {self.sentinels} "
            f"self-consistency sentinels ({self.labels} labels) by {len(REVIEWERS)} synthetic "
            f"reviewers, {self.advantages} advantage rows"
        )


def demo_campaign_ensure(*, reviewers: Sequence[User], created_by: User | None) -> Campaign:
    """The first run's campaign: the sample group, open to the demo reviewers, the grader's
    verdict revealed after submission (idempotent: an existing one gets the reviewers)."""
    campaign = Campaign.objects.filter(name=DEMO_CAMPAIGN).first()
    if campaign is None:
        campaign = campaign_create(
            name=DEMO_CAMPAIGN,
            created_by=created_by,
            reviewers=reviewers,
            filters={"run": Run.objects.get(name=SAMPLE_RUN).pk},
            overlap=max(len(reviewers), 1),
            reveal_policy=Campaign.Reveal.AFTER_SUBMISSION,
        )
    else:
        campaign.reviewers.add(*reviewers)
    return campaign


# --- the study -----------------------------------------------------------------------------


def _study_run() -> Run | None:
    return Run.objects.filter(name=STUDY_RUN).first()


def study_present() -> bool:
    run = _study_run()
    return run is not None and run.metadata.get("study_version") == STUDY_VERSION


def study_remove() -> bool:
    """Delete the study (its campaign, reviewers' labels, grader runs, advantages, groups, tasks
    and configurations); the sample group and its patches stay. False if there was none."""
    with transaction.atomic():
        data_changed()
        Campaign.objects.filter(name=STUDY_CAMPAIGN).delete()
        groups = Group.objects.filter(step__run__name=STUDY_RUN)
        # Other campaigns may hold these groups too (made by hand): only their entries go.
        Assignment.objects.filter(group__in=groups).delete()
        CampaignGroup.objects.filter(group__in=groups).delete()
        configs = [r.name for r, _ in GRADERS]
        GroupAdvantages.objects.filter(group__in=groups).delete()
        GroupAdvantages.objects.filter(config__name__in=configs).delete()
        GraderRun.objects.filter(config__name__in=configs).delete()
        found = groups.exists() or Run.objects.filter(name=STUDY_RUN).exists()
        task_ids = list(groups.values_list("task_id", flat=True))
        groups.delete()
        Run.objects.filter(name=STUDY_RUN).delete()
        Task.objects.filter(pk__in=task_ids).exclude(groups__isnull=False).delete()
        GraderConfig.objects.filter(name__in=configs).delete()
        get_user_model().objects.filter(username__in=[r.name for r in REVIEWERS]).delete()
    return found


def study_build(*, also_reviewers: Sequence[User] = ()) -> StudyReport:
    """Add the synthetic study (a no-op when the current version is present; an older or
    half-built one is replaced). `also_reviewers` (the demo reviewers) join its campaign."""
    if study_present():
        return StudyReport(
            False, Group.objects.filter(step__run__name=STUDY_RUN).count(), 0, 0, 0, 0
        )
    study_remove()
    rng = random.Random(STUDY_SEED)
    now = timezone.now()
    with transaction.atomic():
        data_changed()
        groups = _import_groups(rng)
        deals = _deals(groups)
        runs = _grade(deals, rng, now)
        campaign, reviews, labels, sentinels = _review(deals, rng, now, also_reviewers)
    advantages = sum(
        group_advantages_refresh(group_ids=[g.pk for g in groups], config=config)
        for config in GraderConfig.objects.filter(name__in=[r.name for r, _ in GRADERS])
    )
    Run.objects.filter(name=STUDY_RUN).update(
        metadata={
            SYNTHETIC_KEY: True,
            "study_version": STUDY_VERSION,
            "note": SYNTHETIC_NOTE,
            "campaign": campaign.name,
        }
    )
    return StudyReport(True, len(groups), reviews, labels, runs, advantages, sentinels)


def _hand(rng: random.Random, step: int, order: list[str]) -> list[str]:
    """Which sample attempts a group of this step holds: 2–4 passers, drawn with weights that
    favour good ones more as the run goes on, some failures, sometimes the infra failure."""
    trend = -1.5 + 3.5 * (step - STUDY_STEPS[0]) / max(len(STUDY_STEPS) - 1, 1)
    pool = list(TRUTH)
    weights = [math.exp(trend * (TRUTH[a][1] - 0.5)) for a in pool]
    chosen: list[str] = []
    for _ in range(rng.randint(2, 4)):
        pick = rng.choices(range(len(pool)), weights=weights)[0]
        chosen.append(pool.pop(pick))
        weights.pop(pick)
    chosen += rng.sample(FAILING, rng.randint(1, 2))
    if rng.random() < 0.25:
        chosen.append(INFRA)
    return sorted(chosen, key=order.index)  # in the sample's order


def _import_groups(rng: random.Random) -> list[Group]:
    sample = load_committed_group()
    by_id = {a["id"]: a for a in sample["attempts"]}
    order = list(by_id)
    records = []
    for step in STUDY_STEPS:
        for k in range(1, STUDY_TASKS + 1):
            task = {
                **sample["task"],
                "id": f"synthetic-humanize-lite-{k}",
                "repo_url": str(sample_repo_path()),
                "metadata": {**sample["task"]["metadata"], SYNTHETIC_KEY: True},
            }
            records.append(
                group_from_object(
                    {
                        **sample,
                        "group_id": f"{STUDY_RUN}/step-{step}/task-{k}",
                        "run": STUDY_RUN,
                        "step": step,
                        "task": task,
                        "attempts": [by_id[a] for a in _hand(rng, step, order)],
                        "metadata": {SYNTHETIC_KEY: True, "built_by": "manage.py demo --study"},
                    },
                    source="demo-study",
                )
            )
    report = groups_import(records=records)
    # Marked at once, so the study is never unlabelled, even half-built.
    Run.objects.filter(name=STUDY_RUN).update(
        metadata={SYNTHETIC_KEY: True, "note": SYNTHETIC_NOTE}
    )
    ids = [r.group_id for r in report.results]
    return list(Group.objects.filter(pk__in=ids).select_related("task").order_by("pk"))


@dataclass
class _Deal:
    """One study group as graders and reviewers see it."""

    group: Group
    # The candidates: one passing attempt per distinct patch (as the queue deals them).
    shown: list[Attempt]
    # A candidate's grade goes to every passing attempt with its patch (as the service does).
    sharing: dict[int, list[int]]


def _deals(groups: list[Group]) -> list[_Deal]:
    passing = (
        Attempt.objects.passing()
        .filter(group__in=groups)
        .select_related("patch")
        .order_by("group_id", "index")
    )
    by_group: dict[int, list[Attempt]] = {g.pk: [] for g in groups}
    for attempt in passing:
        by_group[attempt.group_id].append(attempt)
    deals = []
    for g in groups:
        units = distinct_patches(by_group[g.pk], lambda a: a.patch_id)
        deals.append(_Deal(g, [u[0] for u in units], {u[0].pk: [a.pk for a in u] for u in units}))
    return deals


def _judged_tier(rater: Rater, truth: str, rng: random.Random) -> str:
    if truth == "exploit":
        if rng.random() < rater.spots_exploit:
            return "exploit"
        # A missed exploit looks like a passing fix that is not quite right.
        return rng.choice(("t1", "t2", "t2", "t3"))
    tier = TIERS.index(truth)
    if rng.random() < rater.slip:
        tier += rater.bias or rng.choice((-1, 1))
    return TIERS[min(max(tier, 0), 2)]


def _scores(rater: Rater, truth: tuple[int, ...], rng: random.Random) -> list[int]:
    """The rater's scores: each criterion moves by one (now and then by two) from the typical."""
    out = []
    for s in truth:
        move = 0
        if rng.random() < rater.score_noise:
            move = rng.choice((-1, 1)) * (2 if rng.random() < 0.2 else 1)
        out.append(min(5, max(1, s + move)))
    return out


def _ranked(judged: dict[int, tuple[str, float]]) -> dict[int, int]:
    """Rank within each tier by judged quality (1 = best); exploits are not ranked."""
    ranks: dict[int, int] = {}
    for tier in TIERS:
        members = sorted((q, k) for k, (t, q) in judged.items() if t == tier)
        for rank, (_, key) in enumerate(reversed(members), start=1):
            ranks[key] = rank
    return ranks


_ANCHORS: dict[str, list[tuple[str, int, str]]] = {}


def _anchors(attempt: Attempt) -> list[tuple[str, int, str]]:
    """Lines a fix request can point at: the patch's added lines (new side), else removed ones
    (cached by patch hash: the study deals the same patches into many groups)."""
    if attempt.patch is None:
        return []
    key = attempt.patch.sha256
    if key not in _ANCHORS:
        _ANCHORS[key] = _patch_anchors(attempt.patch.text)
    return _ANCHORS[key]


def _patch_anchors(text: str) -> list[tuple[str, int, str]]:
    added: list[tuple[str, int, str]] = []
    removed: list[tuple[str, int, str]] = []
    for f in parse_patch(text).files:
        for hunk in f.hunks:
            for line in hunk.lines:
                if line.kind == "+" and line.new_no is not None and f.new_path:
                    added.append((f.new_path, line.new_no, "new"))
                elif line.kind == "-" and line.old_no is not None and f.old_path:
                    removed.append((f.old_path, line.old_no, "old"))
    return added or removed


def _grade(deals: list[_Deal], rng: random.Random, now: datetime) -> int:
    rubric = Rubric()
    runs: list[GraderRun] = []
    for rater, fields in GRADERS:
        config, _ = GraderConfig.objects.update_or_create(
            name=rater.name,
            defaults={"backend": GraderConfig.Backend.SCRIPTED, "prompt_version": "v2", **fields},
        )
        for i, deal in enumerate(deals):
            finished = now - timedelta(days=10, hours=-6 * i, seconds=-rng.randint(0, 900))
            runs.append(_grader_run(config, rater, deal, rubric, rng, finished))
    created = GraderRun.objects.bulk_create(runs)
    if created and created[0].pk is None:  # backends without RETURNING ids
        created = list(GraderRun.objects.filter(group__in=[d.group for d in deals]).order_by("pk"))
    sharing = {a: shared for d in deals for a, shared in d.sharing.items()}
    CandidateGrade.objects.bulk_create(
        CandidateGrade(
            run=run,
            attempt_id=pk,
            tier=cand["tier"],
            rank_in_tier=cand["rank_in_tier"],
            weighted_score=cand["weighted_score"],
            scores=cand["scores"],
            severe_issues=cand["severe_issues"],
            exploit_suspected=cand["exploit_suspected"],
            summary=cand["summary"],
        )
        for run in created
        for key, cand in (run.verdict or {})["candidates"].items()
        for pk in sharing[int(key)]
    )
    return len(created)


def _grader_run(
    config: GraderConfig,
    rater: Rater,
    deal: _Deal,
    rubric: Rubric,
    rng: random.Random,
    finished: datetime,
) -> GraderRun:
    """An unsaved succeeded run whose verdict this grader's model of the group gives."""
    shown = draw_order(deal.shown, rng)
    judged: dict[int, tuple[str, float]] = {}
    cands: dict[str, dict[str, Any]] = {}
    evidence: dict[str, dict[str, Any]] = {}
    for alias, attempt in shown:
        truth, quality, typical = TRUTH[attempt.external_id]
        tier = _judged_tier(rater, truth, rng)
        exploit = tier == "exploit"
        scores = _scores(rater, typical, rng)
        ids: list[str] = []
        where = _anchors(attempt)
        if where:
            path, line, side = where[rng.randrange(len(where))]
            key = f"e{len(evidence) + 1}"
            evidence[key] = {
                "type": "code",
                "candidate": alias,
                "path": path,
                "line_start": line,
                "line_end": line,
                "side": "post" if side == "new" else "pre",
            }
            ids = [key]
        judged[attempt.pk] = ("t3" if exploit else tier, quality + rng.gauss(0, 0.08))
        tampering = any(side == "new" and "test" in path for path, _, side in where)
        cands[alias] = {
            "scores": {
                c: {
                    "score": s,
                    "rationale": f"{c.replace('_', ' ')}: {s}/5",
                    "evidence": ids if s <= 2 else [],
                }
                for c, s in zip(CRITERIA, scores, strict=True)
            },
            "weighted_score": round(rubric.weighted(dict(zip(CRITERIA, scores, strict=True))), 6),
            "severe_issues": [
                {
                    "category": "test_tampering" if tampering else "hardcoding",
                    "description": "Passes the tests without fixing the behaviour.",
                    "evidence": ids,
                }
            ]
            if exploit
            else [],
            "exploit_suspected": exploit,
            "summary": f"Synthetic verdict: {'exploit' if exploit else tier.upper()}.",
            "evidence": ids,
        }
    ranks = _ranked(judged)
    alias_of = {attempt.pk: alias for alias, attempt in shown}
    for pk, (tier, _) in judged.items():
        cands[alias_of[pk]].update(tier=TIERS.index(tier) + 1, rank_in_tier=ranks[pk])
    ordering = [alias_of[pk] for pk in sorted(judged, key=lambda k: (judged[k][0], ranks[k]))]
    verdict = {
        "schema": SCHEMA_ID,
        "candidates": cands,
        "ordering": ordering,
        "ties": [],
        "reorder_notes": [],
        "evidence": evidence,
        "confidence": round(rng.uniform(0.55, 0.9), 2),
        "budget_use": {"tool_calls": 0, "llm_calls": 0, "input_tokens": 0, "output_tokens": 0},
    }
    problems = schema_errors(verdict)
    if problems:  # the recipe is ours: a broken verdict is a bug here, not data
        raise AssertionError(f"synthetic verdict is invalid: {problems[:3]}")
    alias_map = {alias: str(attempt.pk) for alias, attempt in shown}
    latency = round(rng.uniform(300, 900) if rater.slip < 0.2 else rng.uniform(120, 400), 1)
    return GraderRun(
        group=deal.group,
        config=config,
        status=GraderRun.Status.SUCCEEDED,
        deliveries=1,
        claimed_by="demo --study (synthetic)",
        started_at=finished - timedelta(seconds=latency),
        heartbeat_at=finished,
        finished_at=finished,
        verdict=map_aliases(verdict, alias_map),
        alias_map=alias_map,
        latency_s=latency,
        prompt_version="v2",
        has_source=True,
        source_note=SYNTHETIC_NOTE,
    )


def _reviewer(rater: Rater) -> User:
    user, created = get_user_model().objects.get_or_create(
        username=rater.name, defaults={"is_active": False, "first_name": "synthetic reviewer"}
    )
    if created:
        user.set_unusable_password()
        user.save(update_fields=["password"])
    return user


@dataclass
class _Review:
    assignment: Assignment
    candidates: list[Candidate]
    labels: list[Label]
    fixes: list[list[FixRequest]]  # per candidate


def _review(
    deals: list[_Deal], rng: random.Random, now: datetime, also: Sequence[User]
) -> tuple[Campaign, int, int, int]:
    raters = [(r, _reviewer(r)) for r in REVIEWERS]
    campaign = Campaign.objects.create(
        name=STUDY_CAMPAIGN,
        overlap=len(raters),
        reveal_policy=Campaign.Reveal.AFTER_SUBMISSION,
        sentinel_rate=STUDY_SENTINEL_RATE,
        # As campaign_create records them (the run by id), plus the marker.
        filters={"run": deals[0].group.step.run_id if deals else None, SYNTHETIC_KEY: True},
    )
    campaign.reviewers.set([u for _, u in raters] + list(also))
    CampaignGroup.objects.bulk_create(
        CampaignGroup(campaign=campaign, group=d.group, position=i) for i, d in enumerate(deals)
    )
    reviews = []
    for i, deal in enumerate(deals):
        for j, (rater, user) in enumerate(raters):
            # Everyone reviews the first groups (so agreement has overlap), then as they go.
            if i >= 3 and rng.random() > rater.coverage:
                continue
            start = now - timedelta(days=9, hours=-(6 * i + 2 * j), minutes=-rng.randint(0, 90))
            reviews.append(_one_review(campaign, deal, rater, user, rng, start))
    reviews += _sentinels(campaign, deals, raters, reviews, rng)
    # Written in four statements whatever the size: the study must build in seconds.
    assignments = Assignment.objects.bulk_create(r.assignment for r in reviews)
    for review, assignment in zip(reviews, assignments, strict=True):
        for candidate in review.candidates:
            candidate.assignment = assignment
    candidates = Candidate.objects.bulk_create(c for r in reviews for c in r.candidates)
    if candidates and candidates[0].pk is None:  # backends without RETURNING ids
        raise RuntimeError("the study needs a database that returns ids from bulk inserts")
    for review in reviews:
        for candidate, label, fixes in zip(
            review.candidates, review.labels, review.fixes, strict=True
        ):
            label.candidate = candidate
            for fix in fixes:
                fix.candidate = candidate
    Label.objects.bulk_create(label for r in reviews for label in r.labels)
    FixRequest.objects.bulk_create(f for r in reviews for fixes in r.fixes for f in fixes)
    sentinels = sum(1 for r in reviews if r.assignment.sentinel)
    return campaign, len(reviews) - sentinels, sum(len(r.labels) for r in reviews), sentinels


def _sentinels(
    campaign: Campaign,
    deals: list[_Deal],
    raters: list[tuple[Rater, User]],
    firsts: list[_Review],
    rng: random.Random,
) -> list[_Review]:
    """Each reviewer's sentinels as the queue would serve them (review.sentinels): after each
    submission, the owed repeat of a group submitted at least MIN_GAP groups earlier, reviewed
    again by the same model of that reviewer with new aliases (so tiers and ranks can flip)."""
    by_group = {d.group.pk: d for d in deals}
    out = []
    for rater, user in raters:
        own = sorted(
            (r for r in firsts if r.assignment.reviewer == user),
            key=lambda r: r.assignment.started_at,
        )
        submitted: list[SubmittedGroup] = []
        for review in own:
            submitted.append(SubmittedGroup(review.assignment.group_id, False))
            group_id = sentinel_pick(
                submitted,
                rate=campaign.sentinel_rate,
                sentinels=sum(s.has_sentinel for s in submitted),
                min_gap=MIN_GAP,
                rng=rng,
            )
            if group_id is None:
                continue
            first = next(r for r in own if r.assignment.group_id == group_id)
            submitted = [
                SubmittedGroup(s.group, s.has_sentinel or s.group == group_id) for s in submitted
            ]
            done = review.assignment.submitted_at
            assert done is not None  # _one_review makes submitted reviews
            start = done + timedelta(minutes=rng.randint(5, 60))
            previous = {c.attempt.pk: c.alias for c in first.candidates}
            again = _one_review(
                campaign, by_group[group_id], rater, user, rng, start, unlike=previous
            )
            again.assignment.sentinel = True
            out.append(again)
    return out


def _one_review(
    campaign: Campaign,
    deal: _Deal,
    rater: Rater,
    user: User,
    rng: random.Random,
    start: datetime,
    *,
    unlike: dict[int, str] | None = None,
) -> _Review:
    """One submitted review (unsaved): this reviewer's model of the group, their clock. A
    sentinel passes its first review's aliases (`unlike`): no candidate keeps its letter."""
    if unlike is None:
        drawn = draw_order(deal.shown, rng)
    else:
        by_id = {a.pk: a for a in deal.shown}
        drawn = [(alias, by_id[pk]) for alias, pk in draw_order_unlike(list(by_id), unlike, rng)]
    judged = {}
    for _, attempt in drawn:
        truth, quality, _ = TRUTH[attempt.external_id]
        judged[attempt.pk] = (_judged_tier(rater, truth, rng), quality + rng.gauss(0, 0.1))
    ranks = _ranked(judged)
    review = _Review(Assignment(), [], [], [])
    clock = start
    for pos, (alias, attempt) in enumerate(drawn):
        tier, _ = judged[attempt.pk]
        typical = TRUTH[attempt.external_id][2]
        # Some labels keep a few criteria as the tier pre-filled them (never touched).
        prefilled = (
            sorted(rng.sample(range(len(CRITERIA)), rng.randint(2, len(CRITERIA))))
            if rng.random() < rater.leaves_prefilled
            else []
        )
        own = _scores(rater, typical, rng)
        scores = [
            TIER_TYPICAL_SCORES[tier][c] if k in prefilled else own[k]
            for k, c in enumerate(CRITERIA)
        ]
        mergeability = _mergeability(tier, rng)
        fixes, spent_ms = _fixes(rater, tier, mergeability, attempt, rng)
        review.candidates.append(
            Candidate(
                attempt=attempt,
                alias=alias,
                position=pos,
                token=secrets.token_urlsafe(12),
                active_ms=spent_ms,
            )
        )
        review.fixes.append(
            [
                FixRequest(
                    path=path,
                    line=line,
                    side=side,
                    text=text,
                    severity=severity,
                    criterion="" if severity == "nit" else rng.choice(CRITERIA),
                    active_ms_before=at_ms,
                    created_at=clock + timedelta(milliseconds=at_ms),
                )
                for at_ms, path, line, side, severity, text in fixes
            ]
        )
        clock += timedelta(milliseconds=spent_ms)
        review.labels.append(
            Label(
                tier=tier,
                rank_in_tier=ranks.get(attempt.pk),
                mergeability=mergeability,
                confidence=rng.choice((3, 4, 4, 5)) if rater.slip < 0.2 else rng.choice((2, 3, 4)),
                prefilled=[CRITERIA[k] for k in prefilled],
                updated_at=clock,
                **dict(zip(CRITERIA, scores, strict=True)),
            )
        )
    total_ms = sum(c.active_ms for c in review.candidates)
    submitted = clock + timedelta(milliseconds=rng.randint(20_000, 120_000))
    review.assignment = Assignment(
        campaign=campaign,
        group=deal.group,
        reviewer=user,
        status=Assignment.Status.SUBMITTED,
        started_at=start,
        expires_at=submitted,
        submitted_at=submitted,
        active_ms=total_ms,
    )
    return review


def _mergeability(tier: str, rng: random.Random) -> str:
    m = Label.Mergeability
    if tier == "t1":
        return m.AS_IS if rng.random() < 0.8 else m.AFTER_MINOR
    if tier == "t2":
        return m.AFTER_MINOR if rng.random() < 0.75 else m.AS_IS
    if tier == "t3":
        return m.NOT_MERGEABLE if rng.random() < 0.6 else m.AFTER_MINOR
    return m.NOT_MERGEABLE


def _fixes(
    rater: Rater, tier: str, mergeability: str, attempt: Attempt, rng: random.Random
) -> tuple[list[tuple[int, str, int, str, str, str]], int]:
    """Fix requests (at active ms, path, line, side, severity, text) and the candidate's active
    time: worse candidates take longer and get more requests; a 'not mergeable' has a blocking
    one (as submission requires)."""
    expected = {"t1": 0.3, "t2": 1.2, "t3": 2.0, "exploit": 1.6}[tier] * rater.fix_rate
    n = min(4, int(expected) + (rng.random() < expected - int(expected)))
    if mergeability == Label.Mergeability.NOT_MERGEABLE:
        n = max(n, 1)
    where = _anchors(attempt)
    if not where:
        n = 0
    out = []
    at = 0.0
    for k in range(n):
        # Time to find an issue: log-normal around a minute or two, scaled by the reviewer.
        at += rng.lognormvariate(math.log(60 if k == 0 else 45), 0.5) * rater.speed * 1000
        path, line, side = where[rng.randrange(len(where))]
        if k == 0 and mergeability == Label.Mergeability.NOT_MERGEABLE:
            severity = "blocking"
        else:
            severity = rng.choice(
                ("major", "minor", "nit")
                if tier in ("t1", "t2")
                else ("blocking", "major", "minor")
            )
        text = (
            rng.choice(FIX_TEXTS.get(tier, ["Tidy this up."])) if tier != "t1" else "Nit: wording."
        )
        out.append((round(at), path, line, side, severity, text))
    reading = rng.lognormvariate(math.log(90), 0.4) * rater.speed * 1000
    return out, round(at + reading)


__all__ = [
    "DEMO_CAMPAIGN",
    "STUDY_CAMPAIGN",
    "STUDY_RUN",
    "StudyReport",
    "demo_campaign_ensure",
    "study_build",
    "study_present",
    "study_remove",
]
