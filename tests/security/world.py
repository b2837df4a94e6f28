"""One small but complete world for the permission walk: every kind of object a URL can name.

The sample group reviewed in a campaign by two reviewers (each with an assignment), a third
reviewer with none, staff, a superuser, an API client, a succeeded grader run with a verdict,
a fix request, a label, a disagreement flag, stored advantages and an idempotency record.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.contrib.auth.models import Group as AuthGroup
from django.contrib.auth.models import User
from django.db import models
from django.utils import timezone

from grading.grader.analysis.model import load_default_fit
from grading.models import Attempt, GraderApproval, GraderFit, GraderRun, Group, IdempotencyKey
from grading.services.advantages import group_advantages_refresh
from grading.services.demo import sample_load
from grading.services.tokens import api_token_create
from review.models import Assignment, Campaign, Candidate, Disagreement, FixRequest
from review.services.campaigns import campaign_create
from review.services.queue import assignment_next
from review.services.reviewing import fix_request_create, label_save
from tests.factories import ServiceAccountFactory, StaffFactory, UserFactory
from tests.training.builders import config, grade


@dataclass
class World:
    group: Group
    campaign: Campaign
    owner: User
    other: User
    fresh: User
    staff: User
    superuser: User
    api_user: User
    api_secret: str
    submit_secret: str
    assignment: Assignment
    candidate: Candidate
    fix: FixRequest
    grader_run: GraderRun


def _first_file(candidate: Candidate) -> str:
    patch = candidate.attempt.patch
    assert patch is not None
    return str(patch.files.order_by("pk").values_list("target_path", flat=True)[0])


def world_build() -> World:
    sample_load(grade=False)
    group = Group.objects.get(external_id="sample-humanize-lite-1024")
    owner = UserFactory.create(username="owner")
    other = UserFactory.create(username="other")
    fresh = UserFactory.create(username="fresh")
    staff = StaffFactory.create(username="lead")
    superuser = StaffFactory.create(username="root", is_superuser=True)
    api_user = ServiceAccountFactory.create(username="trainer")
    _, secret = api_token_create(
        user=api_user, name="training loop", scopes=["submit", "read", "export"]
    )
    _, submit_only = api_token_create(user=api_user, name="submit only", scopes=["submit"])
    campaign = campaign_create(
        name="Permissions",
        created_by=staff,
        reviewers=[owner, other],
        filters={},
        overlap=2,
        reveal_policy=Campaign.Reveal.AFTER_SUBMISSION,
    )
    assignment = assignment_next(campaign=campaign, reviewer=owner)
    theirs = assignment_next(campaign=campaign, reviewer=other)
    assert assignment is not None and theirs is not None
    candidate = assignment.candidates.order_by("position").first()
    assert candidate is not None
    label_save(candidate=candidate, values={"tier": "t2", "notes": "fine"})
    fix = fix_request_create(
        candidate=candidate,
        path=_first_file(candidate),
        line=1,
        side="new",
        text="rename this",
        severity="nit",
        criterion="",
    )
    cfg = config()
    passing = Attempt.objects.filter(group=group, test_reward__gt=0).order_by("index")
    run = grade(group, cfg, {a.external_id: (1, n + 1) for n, a in enumerate(passing)})
    group_advantages_refresh(group_ids=[group.pk], config=cfg)
    shipped = load_default_fit()
    GraderFit.objects.create(
        config=cfg, version=shipped.version, fit=shipped.to_dict(), held_out=shipped.held_out
    )
    GraderApproval.objects.create(
        config=cfg, basis="leave_one_task_out", thresholds={"kappa": 0.65}, figures={},
        passed=True,
    )  # fmt: skip
    their_candidate = theirs.candidates.first()
    assert their_candidate is not None
    Disagreement.objects.create(
        candidate=their_candidate, grader_run=run, note="no", created_at=timezone.now()
    )
    IdempotencyKey.objects.create(
        user=api_user, key="k-1", request_hash="0" * 64, status_code=201, response={}
    )
    AuthGroup.objects.create(name="leads")
    return World(
        group=group,
        campaign=campaign,
        owner=owner,
        other=other,
        fresh=fresh,
        staff=staff,
        superuser=superuser,
        api_user=api_user,
        api_secret=secret,
        submit_secret=submit_only,
        assignment=assignment,
        candidate=candidate,
        fix=fix,
        grader_run=run,
    )


def any_pk(model: type[models.Model]) -> str:
    """Some existing object of `model`, for the admin's object URLs."""
    pk = model._default_manager.order_by("pk").values_list("pk", flat=True).first()
    assert pk is not None, f"world_build() makes no {model.__name__}: add one"
    return str(pk)
