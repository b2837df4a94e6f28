"""The read endpoints: runs and steps paginated, a group's grader runs and verdicts, labels, and
the three exports as zips."""

from __future__ import annotations

import io
import json
import zipfile

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from grading.models import GraderRun, Group
from tests.training.builders import config, grade, import_groups, step_group

pytestmark = pytest.mark.django_db
TIERS = {"p1": (1, 1), "p2": (3, 1), "p3": (2, 1), "p4": (2, 2)}


@pytest.fixture
def graded():
    cfg = config()
    groups = import_groups(*(step_group(f"t-{i}", step=i % 3) for i in range(6)))
    for g in groups:
        grade(g, cfg, TIERS)
    return groups


def test_runs_and_steps_are_paginated(full, graded):
    import_groups(step_group("t-x", run="run-2"))
    page = full.get("/api/v1/runs?page_size=1").json()
    assert page["count"] == 2 and len(page["results"]) == 1 and page["next"]
    assert page["results"][0] == {
        "name": "run-1",
        "metadata": {},
        "created_at": page["results"][0]["created_at"],
        "steps": 3,
        "groups": 6,
    }
    second = full.get(page["next"]).json()
    assert [r["name"] for r in second["results"]] == ["run-2"] and second["next"] is None
    steps = full.get("/api/v1/runs/run-1/steps?page_size=2").json()
    assert steps["count"] == 3 and [s["step"] for s in steps["results"]] == [0, 1]
    assert steps["results"][0]["groups"] == 2


def test_a_groups_grader_runs_and_verdicts(full, graded):
    group = graded[0]
    by_id = {a.external_id: a.pk for a in group.attempts.all()}
    # Stored as the loop writes it: candidates by attempt database id.
    GraderRun.objects.filter(group=group).update(
        verdict={
            "candidates": {str(by_id[a]): {"tier": t} for a, (t, _) in TIERS.items()},
            "ordering": [str(by_id[a]) for a in ("p1", "p3", "p4", "p2")],
            "evidence": {"e1": {"type": "code", "candidate": str(by_id["p2"]), "path": "a.py"}},
            "confidence": 0.5,
        }
    )
    runs = full.get(f"/api/v1/groups/{group.pk}/grader-runs").json()
    assert runs["schema"] == "gagar.v2" and runs["count"] == 1
    key = "run-1/0/t-0"  # imported without a group_id
    assert (runs["group_id"], runs["group_db_id"]) == (key, group.pk)
    (run,) = runs["results"]
    assert run["status"] == "succeeded" and run["config"] == "test-config"
    assert run["grader_run_id"] == str(GraderRun.objects.get(group=group).pk)
    assert (run["group_id"], run["group_db_id"]) == (key, group.pk)
    verdicts = full.get(f"/api/v1/groups/{group.pk}/verdicts?config=test-config").json()
    (verdict,) = verdicts["results"]
    assert verdict["grader_run_id"] == run["grader_run_id"]
    assert [(g["attempt_id"], g["tier"], g["rank_in_tier"]) for g in verdict["grades"]] == [
        ("p1", 1, 1),
        ("p3", 2, 1),
        ("p4", 2, 2),
        ("p2", 3, 1),
    ]
    assert all(g["attempt_db_id"] == by_id[g["attempt_id"]] for g in verdict["grades"])
    assert all(g["exploit"] is False and g["exploit_suspected"] is False for g in verdict["grades"])
    # The verdict document names candidates by the bundle's attempt ids, as the grades do.
    document = verdict["verdict"]
    assert set(document["candidates"]) == {"p1", "p2", "p3", "p4"}
    assert document["ordering"] == ["p1", "p3", "p4", "p2"]
    assert document["evidence"]["e1"]["candidate"] == "p2" and document["confidence"] == 0.5
    assert full.get(f"/api/v1/groups/{group.pk}/verdicts?config=other").json()["count"] == 0


def test_a_confirmed_exploit_is_flagged_beside_the_graders_tier(full, graded):
    group = graded[0]
    group.attempts.filter(external_id="p2").update(status="exploit_confirmed")
    (verdict,) = full.get(f"/api/v1/groups/{group.pk}/verdicts").json()["results"]
    grade = next(g for g in verdict["grades"] if g["attempt_id"] == "p2")
    assert (grade["tier"], grade["exploit"]) == (3, True)


def test_the_verdict_list_costs_a_fixed_number_of_queries(full, graded):
    full.get("/api/v1/runs")  # the token's once-a-minute last_used_at write, out of the way
    counts = []
    for g in graded[:2]:
        with CaptureQueriesContext(connection) as ctx:
            full.get(f"/api/v1/groups/{g.pk}/verdicts")
        counts.append(len(ctx.captured_queries))
    assert counts[0] == counts[1] <= 6


def test_labels_are_paginated_rows_per_attempt(full, graded):
    first = full.get("/api/v1/labels?run=run-1&step=0&page_size=5").json()
    assert first["schema"] == "gagar.labels.v2" and first["count"] == 16
    assert len(first["results"]) == 5 and first["next"]
    # Attempt ids repeat across groups; (group_id, attempt_id) is the key.
    ids = [(r["group_id"], r["attempt_id"]) for r in first["results"]]
    rest: list[tuple[str, str]] = []
    url = first["next"]
    while url:
        page = full.get(url).json()
        rest += [(r["group_id"], r["attempt_id"]) for r in page["results"]]
        url = page["next"]
    assert len(set(ids + rest)) == 16
    row = first["results"][0]
    assert {"grader_tier", "consensus_tier", "calibrated_tier", "human_tiers"} <= set(row)


@pytest.mark.parametrize("fmt", ["jsonl", "csv", "parquet"])
def test_the_three_exports_come_as_zips_with_a_manifest(full, graded, fmt):
    for kind, query in (
        ("advantages", f"?run=run-1&config=test-config&format={fmt}"),
        ("labels", f"?run=run-1&format={fmt}"),
        ("package", f"?run=run-1&step=0&format={fmt}"),
    ):
        response = full.get(f"/api/v1/exports/{kind}{query}")
        assert response.status_code == 200, (kind, response.content[:300])
        assert response["Content-Type"] == "application/zip"
        assert "attachment" in response["Content-Disposition"]
        data = b"".join(response.streaming_content)
        with zipfile.ZipFile(io.BytesIO(data)) as zf:
            manifest = json.loads(zf.read("manifest.json"))
            names = zf.namelist()
        assert all(name in names for name in manifest["files"].values())
        assert manifest["format"] == fmt
    assert Group.objects.count() == 6
