"""The dashboard pages: access, caching through the Celery task, numbers, CSV, edge cases."""

from __future__ import annotations

import csv
import io
import re

import pytest
from django.urls import reverse

from review.analytics.presenters import CSV_TABLES
from review.models import StatsSnapshot
from tests.analytics.conftest import run_worker
from tests.analytics.factories import grade_group, make_study, review_group
from tests.analytics.test_payload import build, build_rubric, score_everyone_the_same
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db
URL = "/dashboards/"


def test_it_sends_anonymous_visitors_to_login(client):
    response = client.get(URL)
    assert response.status_code == 302
    assert "/accounts/login/" in response["Location"]


def test_it_refuses_reviewers(client):
    client.force_login(UserFactory(username="rita"))
    assert client.get(URL).status_code == 403
    assert client.get(reverse("dashboards:csv", args=["headline"])).status_code == 403
    assert client.get(reverse("dashboards:export")).status_code == 403


def test_it_shows_computing_and_enqueues_once_without_a_snapshot(
    staff_client, enqueued, django_capture_on_commit_callbacks
):
    build()
    with django_capture_on_commit_callbacks(execute=True):
        response = staff_client.get(URL)
    assert response.status_code == 200
    assert b"Computing\xe2\x80\xa6" in response.content
    assert b'http-equiv="refresh"' in response.content
    assert enqueued.call_count == 1
    # A second view while the computation is queued sends nothing more.
    with django_capture_on_commit_callbacks(execute=True):
        staff_client.get(URL)
    assert enqueued.call_count == 1


def test_it_shows_the_cached_numbers_with_their_time(staff_client, enqueued):
    build()
    staff_client.get(URL)
    assert run_worker() == 1
    response = staff_client.get(URL)
    body = response.content.decode()
    snap = StatsSnapshot.objects.get()
    kappa = snap.payload["headline"]["kappa"]
    assert "Computed at" in body
    assert f"{kappa['estimate']:.3f}" in body
    assert "95% CI [" in body
    assert "Computing…" not in body


def test_it_recomputes_when_reviews_arrive(
    staff_client, enqueued, django_capture_on_commit_callbacks
):
    study = build()
    with django_capture_on_commit_callbacks(execute=True):
        staff_client.get(URL)
    run_worker()
    # A new submitted review changes the data fingerprint: old numbers stay, a refresh is queued.
    extra = UserFactory(username="late")
    review_group(study.campaign, study.groups[0], study.attempts[0], extra, ["t1", "t2", "t3"])
    with django_capture_on_commit_callbacks(execute=True):
        body = staff_client.get(URL).content.decode()
    assert "Computed at" in body and "recomputing" in body
    assert enqueued.call_count == 2
    run_worker()
    assert StatsSnapshot.objects.get().payload["counts"]["reviewers"] == 3


def test_it_serves_every_chart_as_csv(staff_client, enqueued):
    build()
    staff_client.get(URL)
    run_worker()
    payload = StatsSnapshot.objects.get().payload
    for chart in CSV_TABLES:
        if chart == "audit":
            continue
        response = staff_client.get(reverse("dashboards:csv", args=[chart]))
        assert response.status_code == 200, chart
        assert response["Content-Type"].startswith("text/csv")
        rows = list(csv.reader(io.StringIO(response.content.decode())))
        columns, expected = CSV_TABLES[chart](payload)
        assert rows[0] == columns if columns else rows == [[]] or rows == []
        assert len(rows) - 1 == len(expected), chart
    headline = list(
        csv.DictReader(
            io.StringIO(
                staff_client.get(reverse("dashboards:csv", args=["headline"])).content.decode()
            )
        )
    )
    kappa = next(r for r in headline if r["statistic"] == "kappa")
    assert float(kappa["estimate"]) == pytest.approx(payload["headline"]["kappa"]["estimate"])


def test_the_criteria_table_and_csv_show_kappa_with_its_interval(staff_client, enqueued):
    build_rubric()
    # One criterion everyone scores 3: κ undefined, so no interval either.
    score_everyone_the_same("approach_suitability", 3)
    staff_client.get(URL)
    run_worker()
    criteria = StatsSnapshot.objects.get().payload["criteria"]
    response = staff_client.get(reverse("dashboards:csv", args=["criteria"]))
    rows = list(csv.DictReader(io.StringIO(response.content.decode())))
    assert list(rows[0]) == ["criterion", "kappa", "low", "high", "se", "n", "n_tasks"]
    assert [r["criterion"] for r in rows] == [c["criterion"] for c in criteria]
    for row, expected in zip(rows, criteria, strict=True):
        for key in ("kappa", "low", "high", "se"):
            if expected[key] is None:
                assert row[key] == ""
            else:
                assert float(row[key]) == pytest.approx(expected[key])
    assert rows[0]["kappa"] == rows[0]["low"] == rows[0]["high"] == ""

    body = staff_client.get(URL).content.decode()
    defined = criteria[1]
    assert defined["low"] < defined["kappa"] < defined["high"]
    shown = f"{defined['kappa']:.3f} <small>[{defined['low']:.2f}, {defined['high']:.2f}]</small>"
    assert shown in body
    assert re.search(r"<td>approach_suitability</td>\s*<td>—</td>", body)


def test_csv_answers_503_while_computing(staff_client, enqueued):
    build()
    response = staff_client.get(reverse("dashboards:csv", args=["confusion"]))
    assert response.status_code == 503


def test_the_cached_page_runs_a_constant_number_of_queries(
    staff_client, enqueued, django_assert_num_queries
):
    build()
    staff_client.get(URL)
    run_worker()
    staff_client.get(URL)
    # session + user, snapshot, the data version, 6 filter-option lists and the
    # synthetic runs and configurations among them, the synthetic groups in scope (the badge)
    with django_assert_num_queries(13):
        staff_client.get(URL)
    # Ten times the data, the same queries.
    study = make_study(12, 4, run="run-2", reviewers=2)
    for group, atts in zip(study.groups, study.attempts, strict=True):
        grade_group(group, atts, [1, 2, 2, 3])
        for r in study.reviewers:
            review_group(study.campaign, group, atts, r, ["t1", "t2", "t3", "t3"])
    staff_client.get(URL)
    run_worker()
    with django_assert_num_queries(13):
        staff_client.get(URL)


def test_the_criteria_csv_keeps_its_header_for_a_snapshot_from_before_the_intervals():
    stale = {"criteria": [{"criterion": "approach_suitability", "kappa": 0.5, "n": 12}]}
    columns, rows = CSV_TABLES["criteria"](stale)
    assert columns == ["criterion", "kappa", "low", "high", "se", "n", "n_tasks"]
    assert rows == [["approach_suitability", 0.5, None, None, None, 12, None]]
