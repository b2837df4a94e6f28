"""Exports say which grader fit made their verdicts and whether it is approved for training: the
labels, package and advantages manifests list, per configuration and fit version that graded
the exported groups, the fit's id, source and held-out figures and the approval state."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from grading.grader.analysis.model import load_default_fit
from grading.models import GraderApproval, GraderConfig, GraderFit, GraderRun
from grading.services.advantages import AdvantageParams
from grading.services.exports import advantages_export
from review.analytics.exports import labels_export
from review.analytics.package import package_export
from tests.analytics.factories import Study, grade_group, make_study, review_group

pytestmark = pytest.mark.django_db


def _study() -> tuple[Study, GraderFit]:
    """Three reviewed groups graded by an analysis configuration ("team": the first group with
    the shipped fit before a refit, the other two with its stored, approved fit) and by a
    scripted one ("llm", no fit, never evaluated)."""
    study = make_study(3, 3, reviewers=2)
    shipped = load_default_fit()
    team = GraderConfig.objects.create(name="team", backend=GraderConfig.Backend.ANALYSIS)
    artefact = {**shipped.to_dict(), "version": "team-0001"}
    artefact["held_out"] = {"kind": "leave-one-task-out", "reference": {"kappa": 0.7}}
    stored = GraderFit.objects.create(
        config=team, version="team-0001", fit=artefact, campaigns=["gold"],
        held_out=artefact["held_out"],
    )  # fmt: skip
    for i, (g, atts) in enumerate(zip(study.groups, study.attempts, strict=True)):
        run = grade_group(g, atts, [1, 2, 3], config="team")
        GraderRun.objects.filter(pk=run.pk).update(
            fit_version=shipped.version if i == 0 else stored.version
        )
        grade_group(g, atts, [2, 1, 3], config="llm")
        for reviewer, tiers in zip(study.reviewers, (["t1", "t2", "t3"], ["t1", "t3", "t3"]),
                                   strict=True):  # fmt: skip
            review_group(study.campaign, g, atts, reviewer, tiers)
    GraderApproval.objects.create(
        config=team, fit_version=stored.version, basis=GraderApproval.Basis.GOLD,
        campaigns=["gold"], thresholds={"kappa": 0.65}, figures={"stats": {}}, passed=True,
    )  # fmt: skip
    return study, stored


def _by_key(graders: list[dict[str, Any]]) -> dict[tuple[str, str | None], dict[str, Any]]:
    return {(g["grader_config"], g["fit_version"]): g for g in graders}


def _check_graders(graders: list[dict[str, Any]], stored: GraderFit) -> None:
    shipped = load_default_fit()
    by = _by_key(graders)
    assert set(by) == {("team", stored.version), ("team", shipped.version), ("llm", None)}
    now = by[("team", stored.version)]
    assert now["fit"] == {
        "version": stored.version, "id": stored.pk, "source": "stored",
        "held_out": stored.fit["held_out"], "trained_on": stored.fit["trained_on"],
        "current": True,
    }  # fmt: skip
    assert (now["groups"], now["runs"]) == (2, 2)
    assert now["approval"]["approved"] and now["approved_fit"]
    before = by[("team", shipped.version)]
    assert before["fit"]["source"] == "shipped" and before["fit"]["id"] is None
    assert before["fit"]["held_out"] == shipped.held_out and not before["fit"]["current"]
    assert before["fit"]["held_out"]["reference"]["kappa"] > 0  # real leave-one-task-out figures
    # The configuration is approved, but not on the fit that graded this group.
    assert before["approval"]["approved"] and not before["approved_fit"]
    assert before["groups"] == 1
    llm = by[("llm", None)]
    assert llm["fit"] is None and llm["backend"] == "scripted" and llm["groups"] == 3
    assert not llm["approval"]["approved"] and not llm["approved_fit"]
    assert llm["approval"]["reason"] == "never evaluated against people"


def test_the_labels_manifest_names_each_fit_its_figures_and_approval(tmp_path: Path) -> None:
    _, stored = _study()
    labels_export(fmt="jsonl", out_dir=tmp_path / "all")
    manifest = json.loads((tmp_path / "all" / "manifest.json").read_text())
    _check_graders(manifest["graders"], stored)
    rows = pd.read_json(tmp_path / "all" / "labels.jsonl", lines=True)
    team = rows[(rows.grader_config == "team") & rows.grader_run_id.notna()]
    versions = {p["grader_fit_version"] for p in team.provenance}
    assert versions == {stored.version, load_default_fit().version}
    llm = rows[(rows.grader_config == "llm") & rows.grader_run_id.notna()]
    assert len(llm) and {p["grader_fit_version"] for p in llm.provenance} == {None}

    labels_export(fmt="jsonl", out_dir=tmp_path / "llm",
                  config=GraderConfig.objects.get(name="llm"))  # fmt: skip
    manifest = json.loads((tmp_path / "llm" / "manifest.json").read_text())
    assert [(g["grader_config"], g["fit_version"]) for g in manifest["graders"]] == [("llm", None)]


def test_an_unapproved_refit_shows_in_the_manifest(tmp_path: Path) -> None:
    """A newer fit withdraws the approval: the manifest says so for every fit version."""
    _, stored = _study()
    GraderFit.objects.create(config=stored.config, version="team-0002", fit=stored.fit)
    labels_export(fmt="csv", out_dir=tmp_path)
    by = _by_key(json.loads((tmp_path / "manifest.json").read_text())["graders"])
    now = by[("team", stored.version)]
    assert not now["fit"]["current"] and not now["approval"]["approved"]
    assert "is not the current fit team-0002" in now["approval"]["reason"]
    assert not now["approved_fit"]


def test_the_package_carries_each_verdicts_fit_and_the_manifest_its_figures(
    tmp_path: Path,
) -> None:
    _, stored = _study()
    result = package_export(fmt="jsonl", out_dir=tmp_path)
    _check_graders(result.manifest["graders"], stored)
    assert json.loads((tmp_path / "manifest.json").read_text())["graders"] == json.loads(
        json.dumps(result.manifest["graders"])
    )
    rows = pd.read_json(tmp_path / "attempts.jsonl", lines=True)
    verdicts = [v for vs in rows.verdicts for v in vs]
    fits = {(v["grader_config"], v["fit_version"]) for v in verdicts}
    assert fits == {("team", stored.version), ("team", load_default_fit().version), ("llm", None)}


def test_the_advantages_manifest_lists_the_fits_that_graded_the_run(tmp_path: Path) -> None:
    _, stored = _study()
    team = GraderConfig.objects.get(name="team")
    result = advantages_export(run_name="run-1", step=None, fmt="jsonl", out_dir=tmp_path,
                               config=team, params=AdvantageParams())  # fmt: skip
    graders = result.manifest["graders"]
    assert {g["grader_config"] for g in graders} == {"team"}
    by = _by_key(graders)
    assert by[("team", stored.version)]["approved_fit"]
    assert not by[("team", load_default_fit().version)]["approved_fit"]
    assert by[("team", stored.version)]["fit"]["held_out"] == stored.fit["held_out"]
