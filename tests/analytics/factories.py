"""factory_boy factories for the analytics tests, and a builder for a reviewed study."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import timedelta

import factory
from django.test import TestCase
from django.utils import timezone

from grading.models import (
    Attempt,
    CandidateGrade,
    GraderConfig,
    GraderRun,
    Group,
    GroupAdvantages,
    Run,
    Step,
    Task,
)
from grading.services.data_version import data_changed
from review.models import Assignment, Campaign, Candidate, FixRequest, Label
from review.models.reviewing import CRITERIA
from tests.factories import UserFactory


class TaskFactory(factory.django.DjangoModelFactory[Task]):
    class Meta:
        model = Task

    external_id = factory.Sequence(lambda n: f"task-{n}")
    repo = "owner/repo"
    problem_statement = "Fix the bug."
    content_hash = factory.Sequence(lambda n: f"{n:064d}")


class RunFactory(factory.django.DjangoModelFactory[Run]):
    class Meta:
        model = Run
        django_get_or_create = ("name",)

    name = factory.Sequence(lambda n: f"run-{n}")


class StepFactory(factory.django.DjangoModelFactory[Step]):
    class Meta:
        model = Step
        django_get_or_create = ("run", "number")

    run = factory.SubFactory(RunFactory)
    number = 1


class GroupFactory(factory.django.DjangoModelFactory[Group]):
    class Meta:
        model = Group

    step = factory.SubFactory(StepFactory)
    task = factory.SubFactory(TaskFactory)
    content_hash = factory.Sequence(lambda n: f"g{n:063d}")


class AttemptFactory(factory.django.DjangoModelFactory[Attempt]):
    class Meta:
        model = Attempt

    group = factory.SubFactory(GroupFactory)
    external_id = factory.Sequence(lambda n: f"att-{n}")
    index = factory.Sequence(lambda n: n)
    test_reward = 1.0
    agent_system = "swe-loop/run-7"


class GraderConfigFactory(factory.django.DjangoModelFactory[GraderConfig]):
    class Meta:
        model = GraderConfig
        django_get_or_create = ("name",)

    name = "grader-a"
    backend = GraderConfig.Backend.SCRIPTED
    model = "m-1"


class GraderRunFactory(factory.django.DjangoModelFactory[GraderRun]):
    class Meta:
        model = GraderRun

    group = factory.SubFactory(GroupFactory)
    config = factory.SubFactory(GraderConfigFactory)
    status = GraderRun.Status.SUCCEEDED
    verdict = factory.LazyFunction(lambda: {"candidates": {}})
    finished_at = factory.LazyFunction(timezone.now)


class CandidateGradeFactory(factory.django.DjangoModelFactory[CandidateGrade]):
    class Meta:
        model = CandidateGrade

    run = factory.SubFactory(GraderRunFactory)
    attempt = factory.SubFactory(AttemptFactory)
    tier = 1
    rank_in_tier = 1
    weighted_score = 4.0
    scores = factory.LazyFunction(lambda: {c: {"score": 4} for c in CRITERIA})


@dataclass
class Study:
    """Groups of passers with grader tiers and human labels, as the dashboards see them."""

    groups: list[Group] = field(default_factory=list)
    attempts: list[list[Attempt]] = field(default_factory=list)
    campaign: Campaign | None = None
    reviewers: list = field(default_factory=list)


def data_arrived() -> None:
    """What the services these helpers stand in for do (grading.services.data_version): move the
    data version, at once, since a test's transaction never commits."""
    with TestCase.captureOnCommitCallbacks(execute=True):
        data_changed()


def grade_group(
    group: Group,
    attempts: Sequence[Attempt],
    tiers: Sequence[int],
    *,
    config: str = "grader-a",
    replica: int = 0,
    scores: Sequence[float] | None = None,
    ranks: Sequence[int] | None = None,
    rubric: Sequence[dict] | None = None,
) -> GraderRun:
    cfg = GraderConfigFactory(name=config)
    run = GraderRunFactory.create(group=group, config=cfg, replica=replica)
    for i, (a, t) in enumerate(zip(attempts, tiers, strict=True)):
        CandidateGradeFactory(
            run=run,
            attempt=a,
            tier=t,
            rank_in_tier=(ranks[i] if ranks else i + 1),
            weighted_score=(scores[i] if scores else 5.0 - t),
            **({"scores": rubric[i]} if rubric else {}),
        )
    data_arrived()
    return run


def review_group(
    campaign: Campaign,
    group: Group,
    attempts: Sequence[Attempt],
    reviewer,
    tiers: Sequence[str],
    *,
    ranks: Sequence[int] | None = None,
    rubric: int | Sequence[int] = 3,
    mergeable: str = Label.Mergeability.AS_IS,
    fix_ms: Sequence[int | None] | None = None,
    sentinel: bool = False,
) -> Assignment:
    now = timezone.now()
    assignment = Assignment.objects.create(
        campaign=campaign,
        group=group,
        reviewer=reviewer,
        sentinel=sentinel,
        status=Assignment.Status.SUBMITTED,
        started_at=now - timedelta(minutes=30),
        expires_at=now + timedelta(hours=1),
        submitted_at=now,
    )
    for i, (a, t) in enumerate(zip(attempts, tiers, strict=True)):
        cand = Candidate.objects.create(
            assignment=assignment,
            attempt=a,
            alias=chr(65 + i),
            position=i,
            token=f"t{assignment.pk}-{i}",
        )
        Label.objects.create(
            candidate=cand,
            tier=t,
            rank_in_tier=(ranks[i] if ranks else i + 1),
            mergeability=mergeable,
            updated_at=now,
            **dict.fromkeys(CRITERIA, rubric if isinstance(rubric, int) else rubric[i]),
        )
        ms = fix_ms[i] if fix_ms else None
        if ms is not None:
            FixRequest.objects.create(
                candidate=cand,
                path="a.py",
                line=1,
                side="new",
                text="fix",
                severity="major",
                active_ms_before=ms,
                created_at=now,
            )
    data_arrived()
    return assignment


def make_study(
    n_groups: int,
    passers: int,
    *,
    run: str = "run-1",
    step: int = 1,
    reviewers: int = 2,
    tasks: Sequence[Task] | None = None,
) -> Study:
    study = Study()
    st = StepFactory(run=RunFactory(name=run), number=step)
    for k in range(n_groups):
        group = GroupFactory(step=st, **({"task": tasks[k]} if tasks else {}))
        atts = [AttemptFactory(group=group, index=i) for i in range(passers)]
        AttemptFactory(group=group, index=passers, test_reward=0.0)
        study.groups.append(group)
        study.attempts.append(atts)
    study.reviewers = [UserFactory(username=f"rev{i}") for i in range(reviewers)]
    study.campaign = Campaign.objects.create(name=f"c-{run}-{step}-{n_groups}")
    study.campaign.groups.set(study.groups)
    return study


def advantages_row(group: Group, config: GraderConfig, *, capped: bool, shift: float) -> None:
    """A graded advantages row whose λ did (capped) or did not bind."""
    GroupAdvantages.objects.create(
        group=group,
        config=config,
        params_hash="p" * 64,
        params={"lambda_max": 1.5},
        grader_run=GraderRunFactory.create(group=group, config=config, replica=99),
        fallback=False,
        n_attempts=3,
        n_valid=3,
        lambda_raw=2.0 if capped else 1.2,
        lambda_applied=1.5 if capped else 1.2,
        capped=capped,
        mean_shift=shift if capped else 0.0,
        positive_total_before=1.0,
        positive_total_after=1.0,
        attempts=[],
        computed_at=timezone.now(),
    )


def two_campaigns() -> tuple[Study, Campaign]:
    """Six groups of three passers (+1 failure) reviewed in two campaigns.

    The study's campaign has three reviewers per group (rev0 T1/T2/T3, rev1 T1/T2/T2, rev2
    T2/T2/T3); a second campaign over the same groups has two (T3/T1/T1 each), so its consensus
    is T3, T1, T1 and every passer has five reviews across both.
    """
    study = make_study(6, 3, reviewers=3)
    second = Campaign.objects.create(name="second opinion")
    second.groups.set(study.groups)
    others = [UserFactory(username=f"other{i}") for i in range(2)]
    assert study.campaign is not None
    for g, atts in zip(study.groups, study.attempts, strict=True):
        for reviewer, tiers in zip(
            study.reviewers,
            (["t1", "t2", "t3"], ["t1", "t2", "t2"], ["t2", "t2", "t3"]),
            strict=True,
        ):
            review_group(study.campaign, g, atts, reviewer, tiers)
        for reviewer in others:
            review_group(second, g, atts, reviewer, ["t3", "t1", "t1"])
    return study, second
