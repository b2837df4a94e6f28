"""Consensus and calibration writers, the calibrated-label export, the data package (loaded
with Hugging Face `datasets`), the management commands and the browser download."""

from __future__ import annotations

import io
import json
import zipfile

import numpy as np
import pandas as pd
import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from grading.models import Attempt, GraderConfig
from review.analytics.exports import labels_export, reviewer_pseudonym
from review.analytics.filters import Filters
from review.analytics.label_refresh import labels_refresh, labels_stale
from review.analytics.package import package_export
from review.models import CalibratedLabel, CalibrationFit, Campaign, ConsensusLabel
from review.stats import calibrate_tiers
from tests.analytics.factories import grade_group, make_study, review_group
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db


def study3():
    """Six groups of three passers (+1 failure), graded by two configs, three reviewers each."""
    study = make_study(6, 3, reviewers=3)
    for i, (g, atts) in enumerate(zip(study.groups, study.attempts, strict=True)):
        grade_group(g, atts, [1, 2, 3], scores=[4.5, 3.0 - i * 0.1, 1.5])
        grade_group(g, atts, [2, 2, 3], config="grader-b", scores=[3.0, 3.0, 1.0])
        a, b, c = study.reviewers
        review_group(study.campaign, g, atts, a, ["t1", "t2", "t3"])
        review_group(
            study.campaign, g, atts, b, ["exploit", "t2", "t2"] if i == 0 else ["t1", "t2", "t2"]
        )
        review_group(
            study.campaign,
            g,
            atts,
            c,
            ["exploit", "exploit", "t3"] if i == 0 else ["t2", "t2", "t3"],
        )
    return study


def test_consensus_uses_dawid_skene_with_three_reviewers_and_flags_exploit_majority():
    study = study3()
    labels_refresh()
    first = {c.attempt_id: c for c in ConsensusLabel.objects.all()}
    atts = study.attempts[0]
    assert first[atts[0].pk].method == "exploit" and first[atts[0].pk].tier is None
    # Two tier ratings (t2, t2) and one exploit: fewer than three tiers, so the median.
    assert (first[atts[1].pk].method, first[atts[1].pk].tier) == ("median", 2)
    later = study.attempts[3]
    assert first[later[2].pk].method == "dawid_skene"
    assert first[later[2].pk].n_reviews == 3


def test_the_grader_never_votes_in_the_consensus():
    study = study3()
    labels_refresh()
    before = sorted(ConsensusLabel.objects.values_list("attempt_id", "tier", "method"))
    for g, atts in zip(study.groups, study.attempts, strict=True):
        grade_group(g, atts, [3, 3, 1], config="contrarian", replica=0)
    labels_refresh()
    after = sorted(ConsensusLabel.objects.values_list("attempt_id", "tier", "method"))
    assert before == after


def test_every_graded_candidate_gets_a_calibrated_tier_matching_the_stats_module():
    study = study3()
    assert labels_stale()
    result = labels_refresh()
    assert not labels_stale()
    assert result.fits == 2
    fit = CalibrationFit.objects.get(config__name="grader-a")
    labels = list(CalibratedLabel.objects.filter(fit=fit).order_by("attempt_id"))
    assert len(labels) == 18  # every passer, reviewed or not
    for lab in labels:
        assert lab.p_t1 + lab.p_t2 + lab.p_t3 == pytest.approx(1.0)
        assert lab.tier in (1, 2, 3)
    # The held-out error is what review.stats computes from the same inputs.
    cons = dict(ConsensusLabel.objects.values_list("attempt_id", "tier"))
    ids = [a.pk for atts in study.attempts for a in atts]
    score = [next(lab.weighted_score for lab in labels if lab.attempt_id == i) for i in ids]
    human = [np.nan if cons.get(i) is None else cons[i] for i in ids]
    task = [k for k, atts in enumerate(study.attempts) for _ in atts]
    expected = calibrate_tiers(score, human, task)
    assert fit.held_out_mae == pytest.approx(expected.held_out_mae)
    assert fit.n_folds == expected.n_folds


@pytest.mark.parametrize("fmt", ["jsonl", "csv", "parquet"])
def test_label_export_writes_rows_and_a_manifest(tmp_path, fmt):
    study3()
    result = labels_export(fmt=fmt, out_dir=tmp_path, batch=5)  # several batches
    manifest = json.loads((tmp_path / "manifest.json").read_text())
    assert manifest["schema"] == "gagar.labels.v2"
    assert {c["grader_config"] for c in manifest["configurations"]} == {"grader-a", "grader-b"}
    assert manifest["counts"]["attempts"] == 24 and manifest["counts"]["rows"] == 48
    path = tmp_path / f"labels.{fmt}"
    df = {
        "jsonl": lambda: pd.read_json(path, lines=True),
        "csv": lambda: pd.read_csv(path),
        "parquet": lambda: pd.read_parquet(path),
    }[fmt]()
    assert len(df) == 48 == result.counts["rows"]
    passers = df[df["grader_config"] == "grader-a"].dropna(subset=["calibrated_tier"])
    assert len(passers) == 18
    assert set(passers["consensus_method"].dropna()) <= {"median", "dawid_skene", "exploit"}
    text = path.read_bytes()
    assert b"rev0" not in text and b"rev1" not in text  # reviewers are pseudonymous
    humans = df["human_tiers"].iloc[0]
    humans = json.loads(humans) if isinstance(humans, str) else list(humans)
    assert all(h["reviewer"].startswith("r_") for h in humans)


def test_label_export_counts_reviewed_attempts_whose_ids_repeat_across_groups(tmp_path):
    # SWE-bench attempts are named after their system, so every group has the same ids: the
    # count took the distinct ids (11 "reviewed" of 88 on the shared data).
    study3()
    for attempt in Attempt.objects.all():
        Attempt.objects.filter(pk=attempt.pk).update(external_id=f"system-{attempt.index}")
    result = labels_export(fmt="jsonl", out_dir=tmp_path, batch=5)
    assert result.counts["reviewed_attempts"] == 18  # 6 groups x 3 reviewed passers


def test_a_campaign_export_counts_only_that_campaigns_reviews_in_its_consensus(tmp_path):
    # Two campaigns over the same groups: the first campaign's three reviewers put the first
    # passer in T1 (rev0, rev1) or T2 (rev2); a second campaign's two reviewers put it in T3. An
    # export of one campaign showed that campaign's human tiers beside the consensus and review
    # count of both.
    study = study3()
    second = Campaign.objects.create(name="second opinion")
    second.groups.set(study.groups)
    others = [UserFactory(username=f"other{i}") for i in range(2)]
    for g, atts in zip(study.groups, study.attempts, strict=True):
        for reviewer in others:
            review_group(second, g, atts, reviewer, ["t3", "t1", "t1"])

    def rows(campaign: Campaign | None, out: str) -> dict[int, dict]:
        filters = Filters(campaign=campaign.pk) if campaign else Filters()
        labels_export(fmt="jsonl", out_dir=tmp_path / out, filters=filters, config=config)
        lines = (tmp_path / out / "labels.jsonl").read_text().splitlines()
        return {r["attempt_db_id"]: r for r in map(json.loads, lines)}

    config = GraderConfig.objects.get(name="grader-a")
    first, other, everything = rows(study.campaign, "a"), rows(second, "b"), rows(None, "all")
    manifest = json.loads((tmp_path / "a" / "manifest.json").read_text())
    assert "re-estimated from them" in manifest["consensus"]
    assert "do not change whose labels vote" in manifest["consensus"]
    passer = study.attempts[3][0].pk  # rev0 t1, rev1 t1, rev2 t2 in the first campaign
    assert [h["tier"] for h in first[passer]["human_tiers"]] == [1, 1, 2]
    assert first[passer]["n_reviews"] == 3 and first[passer]["consensus_tier"] == 1
    assert [h["tier"] for h in other[passer]["human_tiers"]] == [3, 3]
    assert other[passer]["n_reviews"] == 2 and other[passer]["consensus_tier"] == 3
    assert len(everything[passer]["human_tiers"]) == everything[passer]["n_reviews"] == 5
    # Every row's count is its own human tiers, in each export.
    for export in (first, other, everything):
        assert all(len(r["human_tiers"]) == r["n_reviews"] for r in export.values())
    # The campaign's consensus is what the stored one would be with only its labels.
    second.delete()
    labels_refresh()
    alone = dict(ConsensusLabel.objects.values_list("attempt_id", "tier"))
    assert {a: r["consensus_tier"] for a, r in first.items() if r["n_reviews"]} == alone


def test_a_campaign_package_publishes_that_campaigns_reviews_and_their_consensus(tmp_path):
    study = study3()
    second = Campaign.objects.create(name="internal second opinion")
    second.groups.set(study.groups)
    outsider = UserFactory.create(username="outsider")
    for g, atts in zip(study.groups, study.attempts, strict=True):
        review_group(second, g, atts, outsider, ["t3", "t3", "t3"])
    labels_refresh()

    def package(campaign: Campaign | None, out: str) -> list[dict]:
        filters = Filters(campaign=campaign.pk) if campaign else Filters()
        package_export(fmt="jsonl", out_dir=tmp_path / out, filters=filters)
        return [json.loads(x) for x in (tmp_path / out / "attempts.jsonl").read_text().splitlines()]

    mine, everything = package(study.campaign, "mine"), package(None, "all")
    manifest = json.loads((tmp_path / "mine" / "manifest.json").read_text())
    assert "computed from that campaign's labels alone" in manifest["consensus"]
    hidden = reviewer_pseudonym(outsider.pk)
    assert all(r["reviewer"] != hidden for row in mine for r in row["reviews"])
    assert any(r["reviewer"] == hidden for row in everything for r in row["reviews"])
    labels_export(fmt="jsonl", out_dir=tmp_path / "l", filters=Filters(campaign=study.campaign.pk))
    expected = sorted(
        (r["consensus_tier"] or 0, r["consensus_exploit"] or False)
        for r in map(json.loads, (tmp_path / "l" / "labels.jsonl").read_text().splitlines())
        if r["n_reviews"] and r["grader_config"] == "grader-a"
    )
    got = sorted(
        (row["consensus_tier"] or 0, row["consensus_exploit"] or False)
        for row in mine
        if row["reviews"]
    )
    assert got == expected and len(got) == 18
    # The outsider's T3s moved the whole installation's consensus (and so the unfiltered one).
    unfiltered = sorted(r["consensus_tier"] or 0 for r in everything if r["reviews"])
    assert unfiltered != [t for t, _ in got]


def test_label_export_for_one_configuration_has_one_row_per_attempt(tmp_path):
    study3()
    result = labels_export(
        fmt="jsonl", out_dir=tmp_path, config=GraderConfig.objects.get(name="grader-b")
    )
    assert result.counts["rows"] == result.counts["attempts"] == 24


@pytest.mark.parametrize("fmt", ["jsonl", "parquet", "csv"])
def test_the_data_package_loads_with_hugging_face_datasets(tmp_path, fmt, monkeypatch):
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    import datasets

    monkeypatch.setattr(datasets.config, "HF_DATASETS_CACHE", tmp_path / "hf-cache")
    study3()
    labels_refresh()
    package_export(fmt=fmt, out_dir=tmp_path / "pkg", batch=4)
    manifest = json.loads((tmp_path / "pkg" / "manifest.json").read_text())
    # A Hugging Face dataset: the folder alone, its card declaring configs and features.
    ds = datasets.load_dataset(str(tmp_path / "pkg"), split="train")
    assert ds.num_rows == manifest["counts"]["attempts"] == 24
    row = next(r for r in ds if r["status"] == "valid" and r["test_reward"] == 1.0)
    reviews, verdicts = row["reviews"], row["verdicts"]
    if fmt == "csv":  # CSV has no nesting: nested columns are JSON text there
        reviews, verdicts = json.loads(reviews), json.loads(verdicts)
    else:  # typed structs and lists, not JSON strings
        assert isinstance(ds.features["reviews"], datasets.List)
        assert ds.features["reviews"].feature["tier"] == datasets.Value("int64")
        assert ds.features["verdicts"].feature["exploit_suspected"] == datasets.Value("bool")
    assert len(reviews) == 3 and reviews[0]["reviewer"].startswith("r_")
    assert len(verdicts) == 2 and verdicts[0]["tier"] in (1, 2, 3)
    blob = (tmp_path / "pkg" / manifest["files"]["attempts"]).read_bytes()
    assert b"swe-loop" not in blob  # agent names never leave
    assert row["attempt_key"].startswith("a_")


def test_the_commands_export_with_progress(tmp_path):
    study3()
    out, err = io.StringIO(), io.StringIO()
    call_command(
        "export_labels", "--out", str(tmp_path / "l"), "--format", "csv", stdout=out, stderr=err
    )
    assert "wrote 48 label rows for 24 attempts" in out.getvalue()
    assert "attempt" in err.getvalue()  # tqdm's bar
    call_command(
        "export_package", "--out", str(tmp_path / "p"), "--format", "jsonl", stdout=out, stderr=err
    )
    assert (tmp_path / "p" / "attempts.jsonl").exists()


def test_the_commands_take_a_campaign_by_name_or_id(tmp_path):
    study = study3()
    out = io.StringIO()
    for n, ref in enumerate([study.campaign.name, str(study.campaign.pk)]):
        call_command(
            "export_labels", "--out", str(tmp_path / f"l{n}"), "--campaign", ref,
            "--no-progress", stdout=out,
        )  # fmt: skip
        manifest = json.loads((tmp_path / f"l{n}" / "manifest.json").read_text())
        assert manifest["filters"]["campaign"] == study.campaign.pk
    call_command(
        "export_package", "--out", str(tmp_path / "p"), "--campaign", study.campaign.name,
        "--no-progress", stdout=out,
    )  # fmt: skip
    with pytest.raises(CommandError, match="--campaign: no campaign named 'nope'"):
        call_command("export_labels", "--out", str(tmp_path / "x"), "--campaign", "nope")


def test_the_export_page_downloads_a_zip_with_the_manifest(staff_client):
    study3()
    response = staff_client.get("/dashboards/export/labels.zip?format=csv")
    assert response.status_code == 200
    data = b"".join(response.streaming_content)
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        assert sorted(zf.namelist()) == [
            "README.md",
            "labels.csv",
            "labels.schema.json",
            "manifest.json",
        ]
        df = pd.read_csv(zf.open("labels.csv"))
    assert df["calibrated_tier"].notna().sum() == 36
    assert staff_client.get("/dashboards/export/nothing.zip").status_code == 404
    assert staff_client.get("/dashboards/export").status_code == 200


def test_a_package_downloaded_from_the_export_page_carries_a_fresh_consensus(staff_client):
    # The page's zip called the package writer directly, which never refreshed the stored
    # consensus: reviewed attempts came out with no consensus tier.
    study3()
    assert labels_stale()
    response = staff_client.get("/dashboards/export/package.zip?format=jsonl")
    assert response.status_code == 200
    with zipfile.ZipFile(io.BytesIO(b"".join(response.streaming_content))) as archive:
        name = next(n for n in archive.namelist() if n.endswith("attempts.jsonl"))
        rows = [json.loads(x) for x in archive.read(name).decode().splitlines()]
    reviewed = [r for r in rows if r["reviews"]]
    assert len(reviewed) == 18
    assert all(r["consensus_tier"] is not None or r["consensus_exploit"] for r in reviewed)
