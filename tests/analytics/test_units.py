"""Human-vs-human κ, and what the statistics count (distinct patches by default, attempts as an
option), said on the page."""

from __future__ import annotations

import numpy as np
import pytest
from django.contrib.auth import get_user_model
from django.utils import timezone
from sklearn.metrics import cohen_kappa_score

from grading.domain.bundle import group_from_object
from grading.models import Attempt
from grading.services.imports import groups_import
from review.models import Assignment, Campaign, Candidate, Label
from review.stats import rating_pairs
from tests.analytics.conftest import run_worker
from tests.analytics.test_payload import GROUPS, NUM, build, payload
from tests.importers.helpers import PATCH, attempt, group
from tests.training.builders import BIG_PATCH

pytestmark = pytest.mark.django_db


def test_human_kappa_is_cohens_kappa_of_the_two_reviewers():
    build()
    p = payload()
    h1 = [NUM[t] for _, h, _ in GROUPS for t in h]
    h2 = [NUM[t] for _, _, h in GROUPS for t in h]
    want = cohen_kappa_score(h1, h2, weights="quadratic", labels=[1, 2, 3])
    assert p["headline"]["kappa_humans"]["estimate"] == pytest.approx(want, abs=1e-12)
    assert p["counts"]["human_pairs"] == len(h1)


def test_rating_pairs_pools_every_pair_of_reviewers_oriented_by_reviewer():
    # unit 0: reviewers 0, 1, 2; unit 1: reviewers 2 and 0; unit 2: one rating; NaN dropped.
    unit = np.array([0, 0, 0, 1, 1, 2, 1])
    rater = np.array([0, 2, 1, 2, 0, 1, 1])
    value = np.array([1.0, 3.0, 2.0, 2.0, 3.0, 1.0, np.nan])
    a, b, u = rating_pairs(unit, rater, value)
    got = sorted(zip(u.tolist(), a.tolist(), b.tolist(), strict=True))
    assert got == [(0, 1.0, 2.0), (0, 1.0, 3.0), (0, 2.0, 3.0), (1, 3.0, 2.0)]


def duplicated_study() -> Campaign:
    """One group, five passers on two patch texts, labelled by two reviewers on the two
    candidates they were shown."""
    obj = group(
        "t-dup",
        attempts=[
            attempt(f"a{i}", patch=p)
            for i, p in enumerate([PATCH, BIG_PATCH, PATCH, BIG_PATCH, BIG_PATCH])
        ],
    )
    report = groups_import(records=[group_from_object(obj, source="t")])
    g = report.results[0].group_id
    campaign = Campaign.objects.create(name="dup")
    campaign.entries.create(group_id=g)
    now = timezone.now()
    first = {p: a for a, p in reversed(list(Attempt.objects.values_list("pk", "patch_id")))}
    tiers = {"r1": ("t1", "t2"), "r2": ("t2", "t2")}
    for name, (t_small, t_big) in tiers.items():
        user = get_user_model().objects.create(username=name)
        assignment = Assignment.objects.create(
            campaign=campaign, group_id=g, reviewer=user, status="submitted",
            started_at=now, expires_at=now, submitted_at=now,
        )  # fmt: skip
        for pos, (patch_id, tier) in enumerate(zip(sorted(first), (t_small, t_big), strict=True)):
            c = Candidate.objects.create(
                assignment=assignment, attempt_id=first[patch_id], alias="AB"[pos],
                position=pos, token=f"{name}-{pos}",
            )  # fmt: skip
            Label.objects.create(candidate=c, tier=tier, updated_at=now)
    return campaign


def test_distinct_patches_are_counted_once_and_attempts_on_request():
    campaign = duplicated_study()
    by_patch = payload(campaign=campaign.pk)
    assert by_patch["unit"] == "patch"
    assert by_patch["counts"]["candidates"] == 2 and by_patch["counts"]["reviews"] == 4
    per_attempt = payload(campaign=campaign.pk, unit="attempt")
    assert per_attempt["unit"] == "attempt"
    assert per_attempt["counts"]["candidates"] == 5 and per_attempt["counts"]["reviews"] == 10
    assert per_attempt["counts"]["human_pairs"] == 5


def test_the_page_says_what_it_counts_and_offers_the_other(staff_client, enqueued):
    build()
    staff_client.get("/dashboards/")
    staff_client.get("/dashboards/?unit=attempt")
    assert run_worker() == 2  # one snapshot per unit
    default = staff_client.get("/dashboards/").content.decode()
    assert "Counting distinct patches" in default
    assert '<option value="attempt">attempts</option>' in default
    assert "Quadratic-weighted κ, human vs human" in default
    attempts = staff_client.get("/dashboards/?unit=attempt").content.decode()
    assert "Counting attempts" in attempts
    assert staff_client.get("/dashboards/?unit=bogus").status_code == 200
