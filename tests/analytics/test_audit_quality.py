"""The audit of two runs: a candidate whose consensus tier is known stays in the tier
distribution when its quality is not (every rubric score left pre-filled from the tier), and
the page and CSV say how many such candidates there are, and why."""

from __future__ import annotations

import csv
import io
import statistics

import pytest
from django.urls import reverse
from scipy.stats import mannwhitneyu

from review.models import Label
from review.models.reviewing import CRITERIA
from tests.analytics.conftest import run_worker
from tests.analytics.factories import TaskFactory, make_study, review_group

pytestmark = pytest.mark.django_db
AUDIT = "/dashboards/audit?a=run-a&b=run-b"
# QA's reviewer: 2 T1, 3 T2, 2 T3 and an exploit on run A; the T2 scores are left pre-filled.
TIERS_A = ["t1", "t1", "t2", "t2", "t2", "t3", "t3", "exploit"]
RUBRIC_A = [5, 4, 4, 4, 4, 2, 1, 1]
TIERS_B = ["t1", "t2", "t2", "t3"]
RUBRIC_B = [4, 3, 3, 2]


def _qa_study():
    task = TaskFactory.create()
    a = make_study(1, len(TIERS_A), run="run-a", reviewers=1, tasks=[task])
    b = make_study(1, len(TIERS_B), run="run-b", reviewers=1, tasks=[task])
    review_group(a.campaign, a.groups[0], a.attempts[0], a.reviewers[0], TIERS_A, rubric=RUBRIC_A)
    review_group(b.campaign, b.groups[0], b.attempts[0], b.reviewers[0], TIERS_B, rubric=RUBRIC_B)
    # Choosing T2 pre-filled its typical scores and the reviewer never confirmed them.
    Label.objects.filter(candidate__assignment__group=a.groups[0], tier="t2").update(
        prefilled=list(CRITERIA)
    )


def _payload(staff_client):
    staff_client.get(AUDIT)
    assert run_worker() == 1
    from review.models import StatsSnapshot

    return StatsSnapshot.objects.get().payload


def test_prefilled_candidates_stay_in_the_tier_distribution(staff_client, enqueued):
    _qa_study()
    side_a, side_b = _payload(staff_client)["sides"]
    assert side_a["n_candidates"] == 7  # the exploit has no tier
    assert side_a["tier_share"] == pytest.approx({"T1": 2 / 7, "T2": 3 / 7, "T3": 2 / 7})
    assert side_a["n_with_quality"] == 4
    assert side_a["n_no_quality"] == 3
    assert side_a["no_quality"] == {"prefilled": 3, "unscored": 0}
    # Mean quality over the four with a quality: the pre-filled 4s are not in it.
    known = [5, 4, 2, 1]
    assert side_a["mean_quality"] == pytest.approx(statistics.fmean(known))
    assert side_b["n_candidates"] == 4 and side_b["n_no_quality"] == 0


def test_the_win_rate_pairs_only_candidates_with_a_quality(staff_client, enqueued):
    _qa_study()
    payload = _payload(staff_client)
    u = mannwhitneyu([5, 4, 2, 1], RUBRIC_B, alternative="two-sided").statistic
    assert payload["win_rate"]["estimate"] == pytest.approx(u / 16)
    assert payload["n_pairs"] == 16 and payload["n_shared_tasks"] == 1


def test_the_page_and_csv_say_how_many_have_no_quality_and_why(staff_client, enqueued):
    _qa_study()
    _payload(staff_client)
    body = staff_client.get(AUDIT).content.decode()
    assert 'data-no-quality="3"' in body
    assert "3 of them without a quality" in body
    assert "3 with rubric scores left pre-filled from the tier, not confirmed" in body
    response = staff_client.get(
        reverse("dashboards:csv", args=["audit"]) + "?a=run-a&b=run-b&kind=audit"
    )
    rows = {r["side"]: r for r in csv.DictReader(io.StringIO(response.content.decode()))}
    assert rows["run-a"]["n_candidates"] == "7"
    assert float(rows["run-a"]["share_t2"]) == pytest.approx(3 / 7)
    assert rows["run-a"]["n_with_quality"] == "4"
    assert rows["run-a"]["n_no_quality_prefilled"] == "3"
    assert rows["run-a"]["n_no_quality_unscored"] == "0"
    assert rows["run-b"]["n_no_quality_prefilled"] == "0"


def test_a_candidate_without_any_rubric_score_is_counted_apart(staff_client, enqueued):
    _qa_study()
    # Run B's T3 was tiered without a rubric (the campaign does not require one).
    Label.objects.filter(candidate__assignment__group__step__run__name="run-b", tier="t3").update(
        **dict.fromkeys(CRITERIA)
    )
    side_a, side_b = _payload(staff_client)["sides"]
    assert side_b["n_candidates"] == 4 and side_b["tier_share"]["T3"] == pytest.approx(1 / 4)
    assert side_b["no_quality"] == {"prefilled": 0, "unscored": 1}
    assert side_b["mean_quality"] == pytest.approx(statistics.fmean([4, 3, 3]))
    assert side_a["no_quality"] == {"prefilled": 3, "unscored": 0}


def test_the_csv_of_an_audit_computed_before_the_counts_still_downloads(staff_client, enqueued):
    from review.models import StatsSnapshot

    _qa_study()
    _payload(staff_client)
    snap = StatsSnapshot.objects.get()
    for side in snap.payload["sides"]:
        for key in ("n_with_quality", "n_no_quality", "no_quality"):
            del side[key]
    snap.save(update_fields=["payload"])
    url = reverse("dashboards:csv", args=["audit"]) + "?a=run-a&b=run-b&kind=audit"
    response = staff_client.get(url)
    assert response.status_code == 200
    rows = list(csv.DictReader(io.StringIO(response.content.decode())))
    assert rows[0]["n_with_quality"] == "" and rows[0]["n_candidates"] == "7"
    assert staff_client.get(AUDIT).status_code == 200
