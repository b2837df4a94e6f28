"""Adjudication of disagreement flags: staff-only pages, the decision, and the export column."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.urls import reverse

from review.analytics.exports import labels_export
from review.models import Assignment, Campaign, Disagreement
from review.services.adjudication import disagreement_reopen, disagreement_resolve
from review.services.campaigns import campaign_create
from review.services.queue import assignment_next
from review.services.reviewing import disagreement_flag, review_submit
from tests.review.blind import GRADER_SECRET, grader_verdict_for
from tests.review.helpers import complete_labels
from tests.security.corpus import injection_problems

pytestmark = pytest.mark.django_db
HOSTILE = '<script>alert("flag")</script><img src=x onerror=alert(1)> too generous'


def _review(assignment: Assignment, tier: str) -> None:
    notes = f"notes of {assignment.reviewer.get_username()}"
    complete_labels(assignment, tier, score=3, notes=notes)
    review_submit(assignment=assignment)


@pytest.fixture
def flagged(sample_group, reviewer, other_reviewer, staff):
    run = grader_verdict_for(sample_group)
    campaign = campaign_create(
        name="Reveal",
        created_by=staff,
        reviewers=[reviewer, other_reviewer],
        filters={},
        overlap=2,
        reveal_policy=Campaign.Reveal.AFTER_SUBMISSION,
    )
    mine = assignment_next(campaign=campaign, reviewer=reviewer)
    theirs = assignment_next(campaign=campaign, reviewer=other_reviewer)
    _review(mine, "t3")
    _review(theirs, "t2")
    mine.refresh_from_db()
    graded = {g.attempt_id for g in run.grades.all()}
    candidate = next(c for c in mine.candidates.all() if c.attempt_id in graded)
    flag = disagreement_flag(candidate=candidate, grader_run=run, note=HOSTILE)
    return flag


def test_only_staff_reach_adjudication(client, flagged, reviewer):
    urls = [
        reverse("review:adjudication-list"),
        reverse("review:adjudication-detail", args=[flagged.pk]),
    ]
    for url in urls:
        assert client.get(url).status_code == 302  # to the login page
    client.force_login(reviewer)
    for url in urls:
        assert client.get(url).status_code == 403
    reopen = reverse("review:adjudication-reopen", args=[flagged.pk])
    assert client.post(reopen).status_code == 403


def test_the_queue_lists_open_flags_with_the_note_inert(client, staff, flagged):
    client.force_login(staff)
    page = client.get(reverse("review:adjudication-list")).content.decode()
    assert f"#{flagged.pk}" in page and "alice" in page
    assert "&lt;script&gt;" in page
    assert injection_problems(page) == []
    resolved = client.get(reverse("review:adjudication-list"), {"status": "resolved"})
    assert f"#{flagged.pk}" not in resolved.content.decode()
    assert f"#{flagged.pk}" in client.get("/review/staff/adjudication/?status=all").content.decode()


def test_a_case_shows_the_verdict_every_reviewers_label_and_the_change(
    client, staff, flagged, sample_group
):
    client.force_login(staff)
    response = client.get(reverse("review:adjudication-detail", args=[flagged.pk]))
    assert response.status_code == 200
    page = response.content.decode()
    assert GRADER_SECRET in page  # the grader's summary: staff judge it
    assert "alice" in page and "bob" in page
    assert "notes of alice" in page and "notes of bob" in page
    assert 'class="d-file"' in page  # the candidate's diff
    assert injection_problems(page) == []
    # Shown as the reviewer saw it: no agent or model names.
    agents = {
        name
        for a in sample_group.attempts.all()
        for name in (a.agent_system, a.agent_model, a.agent_family)
        if name
    }
    assert agents and [name for name in agents if name in page] == []


def test_resolving_records_who_when_and_what_then_moves_on(client, staff, flagged):
    client.force_login(staff)
    url = reverse("review:adjudication-detail", args=[flagged.pk])
    response = client.post(
        url, {"resolution": "reviewer_right", "adjudicated_tier": "t3", "note": "agreed"}
    )
    assert response.status_code == 302
    flagged.refresh_from_db()
    assert flagged.status == "resolved" and flagged.resolution == "reviewer_right"
    assert flagged.adjudicated_tier == "t3" and flagged.resolution_note == "agreed"
    assert flagged.resolved_by == staff and flagged.resolved_at is not None
    page = client.get(url).content.decode()
    assert "the reviewer was right" in page.lower() and "Reopen" in page


@pytest.mark.parametrize(
    "data",
    [
        {},
        {"resolution": "maybe"},
        {"resolution": "grader_right", "adjudicated_tier": "t9"},
        {"resolution": "grader_right", "note": "x" * 5001},
    ],
)
def test_a_bad_decision_is_refused_and_nothing_changes(client, staff, flagged, data):
    client.force_login(staff)
    response = client.post(reverse("review:adjudication-detail", args=[flagged.pk]), data)
    assert response.status_code == 400
    assert 'class="errorlist' in response.content.decode()
    flagged.refresh_from_db()
    assert flagged.status == "open" and flagged.resolution == "" and flagged.resolved_at is None


def test_resolving_twice_is_refused_and_reopening_clears_the_outcome(staff, flagged):
    disagreement_resolve(
        disagreement=flagged, resolution="grader_right", adjudicated_tier="", note="", by=staff
    )
    with pytest.raises(ValidationError, match="already resolved"):
        disagreement_resolve(
            disagreement=flagged, resolution="neither", adjudicated_tier="t1", note="", by=staff
        )
    with pytest.raises(ValidationError, match="NUL"):
        disagreement_resolve(
            disagreement=disagreement_reopen(disagreement=flagged),
            resolution="neither",
            adjudicated_tier="",
            note="a\x00b",
            by=staff,
        )
    flagged.refresh_from_db()
    assert flagged.status == "open" and flagged.resolution == "" and flagged.resolved_by is None
    assert flagged.note == HOSTILE  # the reviewer's own words stay


def test_the_database_refuses_an_inconsistent_resolution(flagged):
    for changes in (
        {"status": "resolved"},  # no outcome, no time
        {"resolution": "grader_right"},  # an outcome on an open flag
        {"adjudicated_tier": "t7"},
    ):
        with pytest.raises(IntegrityError), transaction.atomic():
            Disagreement.objects.filter(pk=flagged.pk).update(**changes)


def test_an_unknown_flag_is_not_found(client, staff):
    client.force_login(staff)
    assert client.get(reverse("review:adjudication-detail", args=[999])).status_code == 404
    assert client.post(reverse("review:adjudication-reopen", args=[999])).status_code == 404


def test_the_labels_export_carries_the_adjudicated_tier(staff, flagged, tmp_path: Path):
    disagreement_resolve(
        disagreement=flagged, resolution="reviewer_right", adjudicated_tier="t3", note="", by=staff
    )
    result = labels_export(fmt="parquet", out_dir=tmp_path)
    df = pd.read_parquet(tmp_path / result.files["labels"])
    row = df[df["attempt_db_id"] == flagged.candidate.attempt_id].iloc[0]
    assert row["adjudication"] == "reviewer_right" and row["adjudicated_tier"] == 3
    assert not row["adjudicated_exploit"]
    others = df[df["attempt_db_id"] != flagged.candidate.attempt_id]
    assert others["adjudicated_tier"].isna().all()
    manifest = json.loads((tmp_path / "manifest.json").read_text())
    assert "adjudicated_tier" in manifest["columns"]


def test_the_data_package_carries_the_flag_and_its_outcome_but_not_the_notes(
    staff, flagged, tmp_path: Path
):
    from review.analytics.package import package_export

    disagreement_resolve(
        disagreement=flagged, resolution="neither", adjudicated_tier="t2", note="SECRET", by=staff
    )
    result = package_export(fmt="jsonl", out_dir=tmp_path)
    rows = [json.loads(line) for line in (tmp_path / result.files["attempts"]).open()]
    flags = [d for row in rows for review in row["reviews"] for d in review["disagreements"]]
    assert flags == [
        {
            "status": "resolved",
            "resolution": "neither",
            "adjudicated_tier": 2,
            "adjudicated_exploit": False,
        }
    ]
    text = (tmp_path / result.files["attempts"]).read_text()
    assert "SECRET" not in text and "too generous" not in text


@pytest.mark.parametrize("data", [{"resolution": "grader_right"}, {}])
def test_resolving_an_already_resolved_flag_says_so(client, staff, flagged, data):
    disagreement_resolve(
        disagreement=flagged, resolution="reviewer_right", adjudicated_tier="", note="", by=staff
    )
    client.force_login(staff)
    url = reverse("review:adjudication-detail", args=[flagged.pk])
    response = client.post(url, data)
    assert response.status_code == 409
    page = response.content.decode()
    assert f"Flag #{flagged.pk} is already resolved" in page and "Reopen it" in page
    as_json = client.post(url, data, HTTP_ACCEPT="application/json")
    assert as_json.status_code == 409
    assert "already resolved" in as_json.json()["problems"][0]
    flagged.refresh_from_db()
    assert flagged.resolution == "reviewer_right"
