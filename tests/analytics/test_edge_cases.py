"""Edge cases through the pages: one passer, all tied, missing ratings, a single reviewer,
empty slices. Each computes without error and the page explains what is undefined."""

from __future__ import annotations

import math
from typing import Any

import pytest

from review.models import StatsSnapshot
from tests.analytics.conftest import run_worker
from tests.analytics.factories import grade_group, make_study, review_group
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db
URL = "/dashboards/"


def page(client, query: str = "") -> tuple[str, Any]:
    client.get(URL + query)
    assert run_worker() == 1
    response = client.get(URL + query)
    assert response.status_code == 200
    snap = StatsSnapshot.objects.order_by("-computed_at").first()
    return response.content.decode(), snap.payload


def test_one_passer_per_group_has_no_ranking_but_has_tiers(staff_client, enqueued):
    study = make_study(4, 1)
    for g, atts in zip(study.groups, study.attempts, strict=True):
        grade_group(g, atts, [2])
        for r in study.reviewers:
            review_group(study.campaign, g, atts, r, ["t2"])
    body, p = page(staff_client)
    assert p["headline"]["tau_b"]["estimate"] is None
    assert p["headline"]["top1"]["estimate"] is None
    assert p["headline"]["concordance"]["estimate"] is None
    assert p["headline"]["raw_agreement"]["estimate"] == 1.0
    assert "undefined" in body


def test_all_tied_gives_undefined_kappa_with_a_reason(staff_client, enqueued):
    study = make_study(3, 3)
    for g, atts in zip(study.groups, study.attempts, strict=True):
        grade_group(g, atts, [1, 1, 1], ranks=[1, 1, 1])
        for r in study.reviewers:
            review_group(study.campaign, g, atts, r, ["t1", "t1", "t1"], ranks=[1, 1, 1])
    body, p = page(staff_client)
    assert p["headline"]["kappa"]["estimate"] is None
    assert "single tier" in p["reasons"]["kappa"]
    assert "single tier" in body
    assert p["headline"]["concordance"]["estimate"] is None  # no human-untied pair
    assert p["headline"]["alpha_humans"]["estimate"] is None


def test_missing_ratings_count_only_rated_candidates(staff_client, enqueued):
    study = make_study(4, 3)
    r1, r2 = study.reviewers
    for i, (g, atts) in enumerate(zip(study.groups, study.attempts, strict=True)):
        grade_group(g, atts, [1, 2, 3])
        review_group(study.campaign, g, atts, r1, ["t1", "t2", "t3"])
        if i % 2 == 0:  # the second reviewer reviewed only half of the groups
            review_group(study.campaign, g, atts, r2, ["t1", "t3", "t3"])
    _, p = page(staff_client)
    assert p["counts"]["reviews"] == 18
    assert p["counts"]["reviewed"] == 12
    assert p["headline"]["alpha_humans"]["estimate"] is not None
    assert not math.isnan(p["headline"]["kappa"]["estimate"])


def test_a_single_reviewer_has_no_human_agreement(staff_client, enqueued):
    study = make_study(3, 3, reviewers=1)
    for g, atts in zip(study.groups, study.attempts, strict=True):
        grade_group(g, atts, [1, 2, 3])
        review_group(study.campaign, g, atts, study.reviewers[0], ["t1", "t2", "t2"])
    body, p = page(staff_client)
    assert p["headline"]["alpha_humans"]["estimate"] is None
    assert "needs two reviewers" in p["reasons"]["alpha_humans"]
    assert "A single reviewer" in body
    assert p["headline"]["kappa"]["estimate"] is not None


def test_reviewer_filter_restricts_the_labels(staff_client, enqueued):
    study = make_study(3, 3)
    r1, r2 = study.reviewers
    for g, atts in zip(study.groups, study.attempts, strict=True):
        grade_group(g, atts, [1, 2, 3])
        review_group(study.campaign, g, atts, r1, ["t1", "t2", "t3"])
        review_group(study.campaign, g, atts, r2, ["t3", "t3", "t3"])
    _, p = page(staff_client, f"?reviewer={r1.pk}")
    assert p["counts"]["reviewers"] == 1
    assert p["headline"]["kappa"]["estimate"] == pytest.approx(1.0)


@pytest.mark.parametrize("query", ["", "?run=nope", "?step=99", "?repo=x/y", "?campaign=999"])
def test_empty_slices_render(staff_client, enqueued, query):
    UserFactory(username="someone")
    body, p = page(staff_client, query)
    assert p["counts"]["candidates"] == 0
    assert "No passing candidates match these filters." in body
    assert "No data for this chart" in body


def test_bad_filter_values_are_reported_not_fatal(staff_client, enqueued):
    response = staff_client.get(URL + "?step=abc")
    assert response.status_code == 200
    assert "step must be a whole number" in response.content.decode()
