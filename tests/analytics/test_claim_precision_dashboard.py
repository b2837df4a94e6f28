"""Claim precision on the dashboards and in the labels export (issue 17): per grader
configuration and criterion, task-bootstrap intervals, "can't tell" counted apart; the labels
export carries every mark."""

from __future__ import annotations

import csv
import io
import json

import pytest
from django.urls import reverse
from django.utils import timezone

from review.analytics.exports import labels_export
from review.analytics.label_refresh import labels_refresh
from review.models import Candidate, ClaimMark
from tests.analytics.conftest import run_worker
from tests.analytics.factories import grade_group, make_study, review_group
from tests.analytics.test_payload import payload

pytestmark = pytest.mark.django_db

# Per group (task): marks on (candidate 0, candidate 1) for grader-a's minimality claims.
MARKS = [
    ("correct", "wrong"),
    ("correct", "correct"),
    ("wrong", "unsure"),
    ("correct", "correct"),
    ("correct", "wrong"),
    ("unsure", "correct"),
]


def _study():  # type: ignore[no-untyped-def]
    study = make_study(len(MARKS), 2, reviewers=1)
    (rev,) = study.reviewers
    now = timezone.now()
    for group, atts, marks in zip(study.groups, study.attempts, MARKS, strict=True):
        run = grade_group(group, atts, [1, 2])
        other = grade_group(group, atts, [2, 1], config="grader-b")
        assignment = review_group(study.campaign, group, atts, rev, ["t1", "t2"])
        cands = list(Candidate.objects.filter(assignment=assignment).order_by("position"))
        for n, (c, mark) in enumerate(zip(cands, marks, strict=True)):
            ClaimMark.objects.create(
                candidate=c, grader_run=run, claim_key=f"E{n}|{c.attempt_id}|minimality",
                evidence_id=f"E{n}", criterion="minimality_of_changes", mark=mark, marked_at=now,
            )  # fmt: skip
        # grader-b: one severe-issue claim per group, always wrong.
        ClaimMark.objects.create(
            candidate=cands[0], grader_run=other, claim_key=f"X|{cands[0].attempt_id}|issue0",
            evidence_id="X", criterion="severe_issue", mark="wrong", marked_at=now,
        )  # fmt: skip
    return study


def test_the_payload_has_precision_per_configuration_and_criterion() -> None:
    _study()
    claims = {c["name"]: c for c in payload()["claims"]}
    a = {r["criterion"]: r for r in claims["grader-a"]["rows"]}
    flat = [m for pair in MARKS for m in pair]
    assert set(a) == {"minimality_of_changes", "all"}
    row = a["minimality_of_changes"]
    assert (row["n_marked"], row["n_correct"], row["n_wrong"], row["n_unsure"]) == (
        12,
        flat.count("correct"),
        flat.count("wrong"),
        flat.count("unsure"),
    )
    assert row["precision"]["estimate"] == pytest.approx(7 / 10)
    assert row["precision"]["n_tasks"] == 6
    low, high = row["precision"]["low"], row["precision"]["high"]
    assert low is not None and high is not None and low < 0.7 < high
    b = {r["criterion"]: r for r in claims["grader-b"]["rows"]}
    assert b["severe_issue"]["precision"]["estimate"] == 0.0
    assert b["severe_issue"]["n_marked"] == 6


def test_the_page_and_csv_show_it(staff_client, enqueued) -> None:
    _study()
    staff_client.get("/dashboards/")
    run_worker()
    body = staff_client.get("/dashboards/").content.decode()
    section = body[body.index('id="claim-precision"') :].split("</section>")[0]
    assert "grader-a" in section and "grader-b" in section
    assert "0.700" in section and "Minimality of changes" in section
    assert 'data-criterion="severe_issue"' in section
    rows = list(
        csv.DictReader(
            io.StringIO(
                staff_client.get(reverse("dashboards:csv", args=["claims"])).content.decode()
            )
        )
    )
    mini = next(r for r in rows if r["criterion"] == "minimality_of_changes")
    assert mini["grader_config"] == "grader-a" and float(mini["precision_estimate"]) == 0.7
    assert mini["n_unsure"] == "2" and mini["precision_n_tasks"] == "6"


def test_the_labels_export_carries_the_marks(tmp_path) -> None:
    study = _study()
    labels_refresh()
    labels_export(fmt="jsonl", out_dir=tmp_path)
    rows = [json.loads(line) for line in (tmp_path / "labels.jsonl").read_text().splitlines()]
    first = study.attempts[0][0].pk
    mine = [r for r in rows if r["attempt_db_id"] == first]
    by_config = {r["grader_config"]: r["claim_marks"] for r in mine}
    assert [m["mark"] for m in by_config["grader-a"]] == ["correct"]
    assert [m["criterion"] for m in by_config["grader-b"]] == ["severe_issue"]
    mark = by_config["grader-a"][0]
    assert mark["reviewer"].startswith("r_") and mark["evidence_id"] == "E0"
    assert set(mark) == {"reviewer", "grader_config", "grader_run_id", "evidence_id",
                         "criterion", "mark"}  # fmt: skip
