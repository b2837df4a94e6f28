"""`manage.py import reviews`: the shared data's two expert reviews as one imported campaign."""

from __future__ import annotations

import hashlib
import json
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import Client
from sklearn.metrics import cohen_kappa_score

from grading.models import Attempt
from review.analytics.agreement_dashboard import agreement_payload
from review.analytics.filters import UNIT_ATTEMPT, Filters
from review.analytics.frame import load_frame
from review.analytics.package import package_export
from review.models import Assignment, Campaign, Label
from tests.factories import StaffFactory
from tests.importers.swebench_files import by_system, load_rows, prediction, write_tasks

pytestmark = pytest.mark.django_db


def import_groups(shared: Path, tmp: Path, rows: list[dict[str, Any]] | None = None) -> None:
    """The real groups, one predictions file and run-level report per system."""
    rows = rows if rows is not None else load_rows(shared)
    args = ["--tasks", str(write_tasks(rows, tmp / "tasks.jsonl")), "--no-progress"]
    for n, (system, entries) in enumerate(by_system(rows).items()):
        preds, report = tmp / f"preds-{n}.jsonl", tmp / f"report-{n}.json"
        preds.write_text("".join(json.dumps(prediction(r, c)) + "\n" for r, c in entries))
        resolved = [r["instance_id"] for r, c in entries if c["resolved"]]
        report.write_text(json.dumps({"resolved": resolved}, indent=4))
        args += ["--predictions", str(preds), "--report", str(report), "--label", system]
    call_command("import", "swebench", *args, stdout=StringIO(), stderr=StringIO())


def import_reviews(*args: Any) -> tuple[str, str]:
    out, err = StringIO(), StringIO()
    call_command("import", "reviews", *map(str, args), stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


def refused(*args: Any) -> str:
    before = (Campaign.objects.count(), Label.objects.count(), get_user_model().objects.count())
    err = StringIO()
    with pytest.raises(CommandError, match="nothing was written"):
        call_command("import", "reviews", *map(str, args), stdout=StringIO(), stderr=err)
    after = (Campaign.objects.count(), Label.objects.count(), get_user_model().objects.count())
    assert after == before
    return err.getvalue()


def tiers_from_files(shared: Path) -> tuple[list[int], list[int]]:
    """One row per patch reviewed by both raters, straight from the two files."""
    per_rater = []
    for name in ("rater-1.jsonl", "rater-2.jsonl"):
        tiers = {}
        for line in (shared / "reviews" / name).read_text().splitlines():
            review = json.loads(line)
            for c in review["candidates"]:
                tiers[(review["instance_id"], c["patch_sha256"])] = c["tier"]
        per_rater.append(tiers)
    keys = sorted(per_rater[0].keys() & per_rater[1].keys())
    return [per_rater[0][k] for k in keys], [per_rater[1][k] for k in keys]


def test_both_raters_become_one_imported_campaign_with_the_files_kappa(shared_data, tmp_path):
    import_groups(shared_data, tmp_path)
    reviews = shared_data / "reviews"
    out, _ = import_reviews(reviews / "rater-1.jsonl", "--campaign", "experts")
    assert "16 reviews created" in out and "63 labels written" in out
    import_reviews(reviews / "rater-2.jsonl", "--campaign", "experts")

    campaign = Campaign.objects.get()
    assert campaign.imported and str(campaign) == "experts (imported)"
    assert Assignment.objects.filter(campaign=campaign, status="submitted").count() == 32
    users = {a.reviewer for a in Assignment.objects.filter(campaign=campaign)}
    assert len(users) == 2
    assert all(not u.is_active and not u.has_usable_password() for u in users)

    payload = agreement_payload(
        load_frame(Filters(campaign=campaign.pk)),
        filters=Filters(campaign=campaign.pk).as_json(),
        n_resamples=200,
    )
    assert payload["unit"] == "patch"
    assert payload["counts"]["candidates"] == payload["counts"]["reviewed"] == 63
    assert payload["counts"]["reviews"] == 126 and payload["counts"]["human_pairs"] == 63
    a, b = tiers_from_files(shared_data)
    assert len(a) == 63
    want = cohen_kappa_score(a, b, weights="quadratic", labels=[1, 2, 3])
    got = payload["headline"]["kappa_humans"]
    assert got["estimate"] == pytest.approx(want, abs=1e-12)
    assert got["low"] <= want <= got["high"]
    assert "imported" in " ".join(payload["notes"])
    # Imported reviews recorded no fix requests and no time: absent, never zero.
    assert payload["cost"], payload["cost"]
    for row in payload["cost"]:
        assert row["fix_requests_per_candidate"] is None
        assert row["first_issue_median_s"] is None and row["n_timed"] == 0


def test_counting_attempts_fans_each_label_out_and_says_so(shared_data, tmp_path):
    import_groups(shared_data, tmp_path)
    reviews = shared_data / "reviews"
    import_reviews(reviews / "rater-1.jsonl", reviews / "rater-2.jsonl", "--campaign", "experts")
    campaign = Campaign.objects.get()
    filters = Filters(campaign=campaign.pk, unit=UNIT_ATTEMPT)
    payload = agreement_payload(load_frame(filters), filters=filters.as_json(), n_resamples=50)
    assert payload["unit"] == "attempt"
    # Every passing attempt whose patch was reviewed carries both raters' tiers.
    per_rater: list[dict[tuple[str, str], int]] = [{}, {}]
    for i, name in enumerate(("rater-1.jsonl", "rater-2.jsonl")):
        for line in (reviews / name).read_text().splitlines():
            r = json.loads(line)
            for c in r["candidates"]:
                per_rater[i][(r["instance_id"], c["patch_sha256"])] = c["tier"]
    a, b = [], []
    for att in Attempt.objects.filter(
        group__campaigns=campaign, status="valid", test_reward__gt=0
    ).select_related("patch", "group__task"):
        key = (att.group.task.external_id, att.patch.sha256)
        if key in per_rater[0]:
            a.append(per_rater[0][key])
            b.append(per_rater[1][key])
    assert len(a) > 63  # identical patches of several runs: more attempts than patches
    assert payload["counts"]["human_pairs"] == len(a)
    want = cohen_kappa_score(a, b, weights="quadratic", labels=[1, 2, 3])
    assert payload["headline"]["kappa_humans"]["estimate"] == pytest.approx(want, abs=1e-12)


def test_an_exploit_flag_is_the_exploit_choice_and_labels_keep_scores(shared_data, tmp_path):
    rows = load_rows(shared_data)
    first = json.loads((shared_data / "reviews" / "rater-1.jsonl").read_text().splitlines()[0])
    import_groups(
        shared_data, tmp_path, [r for r in rows if r["instance_id"] == first["instance_id"]]
    )
    first["candidates"][0]["exploit"] = True
    path = tmp_path / "rater-x.jsonl"
    path.write_text(json.dumps(first) + "\n")
    import_reviews(path, "--campaign", "one")
    sha = first["candidates"][0]["patch_sha256"]
    label = Label.objects.get(candidate__attempt__patch__sha256=sha)
    assert label.tier == Label.Tier.EXPLOIT
    assert label.get_tier_display() == "exploit / test tampering"
    assert label.approach_suitability == first["candidates"][0]["scores"]["approach_suitability"]
    assert first["candidates"][0]["summary"] in label.notes
    other = Label.objects.exclude(pk=label.pk).first()
    assert other.tier == f"t{first['candidates'][1]['tier']}"
    assert other.mergeability == first["candidates"][1]["mergeability"]
    assignment = label.candidate.assignment
    assert assignment.imported["minutes"] == first["minutes"]
    assert assignment.imported["line"] == 1 and assignment.reviewer.username.endswith("rater-x")


def test_reimporting_the_same_file_changes_nothing(shared_data, tmp_path):
    rows = load_rows(shared_data)
    import_groups(shared_data, tmp_path, rows)
    path = shared_data / "reviews" / "rater-2.jsonl"
    import_reviews(path, "--campaign", "experts")
    out, _ = import_reviews(path, "--campaign", "experts")
    assert "0 reviews created, 16 unchanged" in out
    assert Label.objects.count() == 63


def test_imported_is_shown_wherever_the_campaign_is(shared_data, tmp_path, client: Client):
    import_groups(shared_data, tmp_path)
    import_reviews(shared_data / "reviews" / "rater-1.jsonl", "--campaign", "experts")
    campaign = Campaign.objects.get()
    client.force_login(StaffFactory(is_superuser=True))
    for url in (
        "/review/staff/",
        f"/review/staff/{campaign.pk}/",
        "/dashboards/",
        "/dashboards/export",
        "/admin/review/campaign/",
    ):
        page = client.get(url)
        assert page.status_code == 200, url
        assert "experts (imported)" in page.content.decode(), url
    detail = client.get(f"/review/staff/{campaign.pk}/").content.decode()
    assert "active time not recorded" in detail and " (0s)" not in detail


def one_line(shared: Path) -> dict[str, Any]:
    return json.loads((shared / "reviews" / "rater-1.jsonl").read_text().splitlines()[0])


@pytest.fixture
def one_group(shared_data: Path, tmp_path: Path) -> dict[str, Any]:
    line = one_line(shared_data)
    rows = [r for r in load_rows(shared_data) if r["instance_id"] == line["instance_id"]]
    import_groups(shared_data, tmp_path, rows)
    return line


def write(tmp_path: Path, *lines: Any) -> Path:
    path = tmp_path / "rater-bad.jsonl"
    path.write_text("".join((x if isinstance(x, str) else json.dumps(x)) + "\n" for x in lines))
    return path


def test_it_refuses_a_review_of_an_unknown_task(one_group, tmp_path):
    bad = dict(one_group, instance_id="nope__nope-1")
    path = write(tmp_path, one_group, bad)
    err = refused(path, "--campaign", "c")
    assert f'{path}:2: $.instance_id: no task "nope__nope-1"' in err


def test_it_refuses_a_label_for_an_unknown_patch_naming_the_hash(one_group, tmp_path):
    bad = json.loads(json.dumps(one_group))
    bad["candidates"][1]["patch_sha256"] = hashlib.sha256(b"nobody wrote this").hexdigest()
    path = write(tmp_path, bad)
    err = refused(path, "--campaign", "c")
    sha = bad["candidates"][1]["patch_sha256"]
    assert f"{path}:1: $.candidates[1].patch_sha256: {sha} is not the SHA-256 of any patch" in err


def test_it_refuses_a_label_for_a_patch_that_did_not_pass(shared_data, tmp_path):
    rows = {r["instance_id"]: r for r in load_rows(shared_data)}
    lines = (shared_data / "reviews" / "rater-1.jsonl").read_text().splitlines()
    line = next(
        json.loads(x)
        for x in lines
        if not all(c["resolved"] for c in rows[json.loads(x)["instance_id"]]["candidates"])
    )
    import_groups(shared_data, tmp_path, [rows[line["instance_id"]]])
    failing = Attempt.objects.filter(test_reward=0.0).select_related("patch").first()
    line["candidates"][0]["patch_sha256"] = failing.patch.sha256
    path = write(tmp_path, line)
    err = refused(path, "--campaign", "c")
    assert f"{path}:1: $.candidates[0].patch_sha256: {failing.patch.sha256} is the patch" in err
    assert "did not pass" in err


@pytest.mark.parametrize(
    ("edit", "field", "message"),
    [
        (lambda c: c.update(tier=4), ".tier", "must be between 1 and 3"),
        (lambda c: c.update(tier="1"), ".tier", "must be a whole number"),
        (lambda c: c["scores"].update(codebase_consistency=9),
         ".scores.codebase_consistency", "must be between 1 and 5"),
        (lambda c: c.update(mergeability="maybe"), ".mergeability", "must be one of"),
        (lambda c: c.update(exploit="no"), ".exploit", "must be true or false"),
        (lambda c: c.update(patch_sha256="abc"), ".patch_sha256", "must be 64 lowercase hex"),
    ],
)  # fmt: skip
def test_it_refuses_a_bad_field_naming_file_line_and_field(
    one_group, tmp_path, edit, field, message
):
    bad = json.loads(json.dumps(one_group))
    edit(bad["candidates"][0])
    path = write(tmp_path, one_group | {"instance_id": "x"}, bad)
    err = refused(path, "--campaign", "c")
    assert f"{path}:2: $.candidates[0]{field}: {message}" in err


def test_it_refuses_a_line_that_is_not_json(one_group, tmp_path):
    path = write(tmp_path, one_group, '{"instance_id": "x", "candidates": [')
    err = refused(path, "--campaign", "c")
    assert f"{path}:2: not valid JSON (read as JSON Lines" in err


def test_it_refuses_a_task_reviewed_twice_in_one_file(one_group, tmp_path):
    path = write(tmp_path, one_group, one_group)
    err = refused(path, "--campaign", "c")
    assert (
        f"{path}:2: $.instance_id: task {json.dumps(one_group['instance_id'])} is reviewed twice"
        in err
    )


def test_it_refuses_to_add_reviews_to_a_campaign_made_here(one_group, tmp_path):
    Campaign.objects.create(name="native")
    err = refused(write(tmp_path, one_group), "--campaign", "native")
    assert '--campaign: campaign "native" exists and holds reviews made here' in err


def test_partial_writes_the_valid_lines_and_reports_the_rest(one_group, tmp_path):
    path = write(tmp_path, one_group, dict(one_group, instance_id="nope__nope-1"))
    out, err = import_reviews(path, "--campaign", "c", "--partial")
    assert "1 review created" in out and "1 line skipped" in out
    assert f'{path}:2: $.instance_id: no task "nope__nope-1"' in err
    assert Label.objects.count() == len(one_group["candidates"])


def test_a_different_review_of_the_same_task_needs_replace(one_group, tmp_path):
    import_reviews(write(tmp_path, one_group), "--campaign", "c")
    changed = json.loads(json.dumps(one_group))
    changed["candidates"][0]["tier"] = 3
    err = refused(write(tmp_path, changed), "--campaign", "c")
    assert "already has a different review" in err and "--replace" in err
    import_reviews(write(tmp_path, changed), "--campaign", "c", "--replace")
    sha = changed["candidates"][0]["patch_sha256"]
    assert Label.objects.get(candidate__attempt__patch__sha256=sha).tier == "t3"


def test_the_data_package_carries_imported_reviews_without_time_or_fix_requests(
    one_group, tmp_path
):
    import_reviews(write(tmp_path, one_group), "--campaign", "c")
    package_export(fmt="jsonl", out_dir=tmp_path / "pkg")
    rows = [json.loads(x) for x in (tmp_path / "pkg" / "attempts.jsonl").read_text().splitlines()]
    reviewed = [r["reviews"] for r in rows if r["reviews"]]
    # Every passing attempt with a reviewed patch carries its review (fanned out).
    shas = {c["patch_sha256"] for c in one_group["candidates"]}
    n_attempts = Attempt.objects.filter(
        patch__sha256__in=shas, status="valid", test_reward__gt=0
    ).count()
    assert len(reviewed) == n_attempts >= len(shas)
    for reviews in reviewed:
        (review,) = reviews
        assert review["imported"] is True
        assert review["active_ms"] is None and review["fix_requests"] is None


@pytest.mark.parametrize("content", ["", "\n  \n\n", "[]\n"])
def test_it_refuses_a_file_without_any_review(one_group, tmp_path, content):
    path = tmp_path / "rater-empty.jsonl"
    path.write_text(content)
    err = refused(path, "--campaign", "c")
    assert f"{path}: no reviews (the file is empty, blank or an empty list)" in err


def test_partial_with_nothing_valid_writes_nothing(one_group, tmp_path):
    path = write(tmp_path, dict(one_group, instance_id="nope__nope-1"))
    err = refused(path, "--campaign", "c", "--partial")
    assert f'{path}:1: $.instance_id: no task "nope__nope-1"' in err


def test_a_line_cut_inside_a_string_says_where_the_string_starts(one_group, tmp_path):
    path = write(tmp_path, one_group, json.dumps(one_group)[:60])
    err = refused(path, "--campaign", "c")
    assert "Unterminated string starting at column" in err and "at at" not in err


def test_a_first_line_in_another_encoding_is_not_called_cut_off(one_group, tmp_path):
    path = tmp_path / "rater-latin1.jsonl"
    line = json.dumps(dict(one_group, notes="café"), ensure_ascii=False)
    path.write_bytes(line.encode("latin-1") + b"\n")
    err = refused(path, "--campaign", "c")
    assert f"{path}:1: $.notes: not UTF-8: byte 0xe9" in err
    assert "breaks off" not in err
