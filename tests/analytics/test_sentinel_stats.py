"""Sentinels in the statistics: consensus, agreement and exports use each reviewer's first
review; the dashboard shows each reviewer's tier flip rate and rank consistency on sentinels,
with counts; the labels export keeps sentinel labels in a column of their own."""

from __future__ import annotations

import json

import pytest
from django.urls import reverse

from review.analytics.agreement_dashboard import agreement_payload
from review.analytics.exports import labels_export
from review.analytics.filters import Filters
from review.analytics.frame import load_frame
from review.analytics.label_refresh import labels_refresh
from review.models import ConsensusLabel
from tests.analytics.conftest import run_worker
from tests.analytics.factories import make_study, review_group

pytestmark = pytest.mark.django_db


def _study():
    """Three groups of three passers, two reviewers; rev0 reviews two groups again."""
    study = make_study(3, 3, reviewers=2)
    a, b = study.reviewers
    for g, atts in zip(study.groups, study.attempts, strict=True):
        review_group(study.campaign, g, atts, a, ["t1", "t2", "t3"])
        review_group(study.campaign, g, atts, b, ["t1", "t2", "t3"])
    # Sentinel of group 0: one flip (T2 → T3), the order kept.
    g0, g1 = study.groups[:2]
    review_group(
        study.campaign,
        g0,
        study.attempts[0],
        a,
        ["t1", "t3", "t3"],
        ranks=[1, 1, 2],
        sentinel=True,
    )
    # Sentinel of group 1: the best candidate becomes an exploit (a flip, and worst).
    review_group(study.campaign, g1, study.attempts[1], a, ["exploit", "t2", "t3"], sentinel=True)
    return study


def test_the_consensus_and_agreement_leave_sentinels_out():
    study = _study()
    frame = load_frame(Filters())
    # 3 groups × 3 passers × 2 reviewers: the two sentinel reviews are not in the labels.
    assert frame.lab_pos.size == 18
    assert not frame.lab_exploit.any()
    labels_refresh()
    cons = {c.attempt_id: c for c in ConsensusLabel.objects.all()}
    # Without the sentinels every candidate's two reviews agree exactly.
    for atts in study.attempts:
        assert [cons[a.pk].tier for a in atts] == [1, 2, 3]
        assert {cons[a.pk].n_reviews for a in atts} == {2}


def test_the_dashboard_shows_flip_rate_and_rank_consistency_per_reviewer():
    study = _study()
    payload = agreement_payload(load_frame(Filters()), filters={}, n_resamples=50)
    rows = {r["reviewer"]: r for r in payload["sentinels"]}
    assert set(rows) == {study.reviewers[0].username}
    r = rows[study.reviewers[0].username]
    # 6 candidates compared; flips: g0 t2→t3, g1 t1→exploit.
    assert (r["n_sentinels"], r["n_candidates"], r["n_flips"]) == (2, 6, 2)
    assert r["flip_rate"] == pytest.approx(2 / 6)
    # Group 0 keeps all 3 pairs in order; in group 1 the best moved to worst: 2 of 3 reversed.
    assert r["n_pairs"] == 6
    assert r["rank_concordance"] == pytest.approx(4 / 6)
    assert payload["counts"]["reviews"] == 18


def test_the_agreement_page_and_csv_show_the_sentinel_table(staff_client, enqueued):
    study = _study()
    staff_client.get("/dashboards/")
    assert run_worker() == 1
    body = staff_client.get("/dashboards/").content.decode()
    assert 'id="sentinels"' in body
    assert f'data-reviewer="{study.reviewers[0].username}"' in body
    assert "0.333" in body and "0.667" in body
    csv_body = staff_client.get(reverse("dashboards:csv", args=["sentinels"])).content.decode()
    header, row = csv_body.strip().splitlines()[:2]
    assert header.split(",")[:4] == ["reviewer", "n_sentinels", "n_candidates", "n_flips"]
    assert row.startswith(f"{study.reviewers[0].username},2,6,2,")


def test_the_labels_export_marks_sentinel_labels_separately(tmp_path):
    study = _study()
    labels_export(fmt="jsonl", out_dir=tmp_path)
    rows = {
        r["attempt_db_id"]: r
        for r in map(json.loads, (tmp_path / "labels.jsonl").read_text().splitlines())
    }
    first = rows[study.attempts[1][0].pk]
    assert [h["tier"] for h in first["human_tiers"]] == [1, 1]
    assert first["n_reviews"] == 2
    (again,) = first["sentinel_tiers"]
    assert again["exploit"] is True and again["tier"] is None
    assert rows[study.attempts[2][0].pk]["sentinel_tiers"] == []
    manifest = json.loads((tmp_path / "manifest.json").read_text())
    assert "sentinel_tiers" in manifest["columns"] and "sentinels" in manifest
