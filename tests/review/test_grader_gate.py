"""The grader gate on real labels: `grader_fit`, `grader_eval` and approval, with bad input."""

from __future__ import annotations

from io import StringIO
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from sklearn.metrics import cohen_kappa_score

from grading.grader.analysis.model import Fit, load_default_fit
from grading.models import GraderApproval, GraderConfig, GraderFit, GraderRun
from grading.selectors.gate import grader_approval_state, grader_fit_version
from grading.services.grader_inputs import backend_for
from review.models import Campaign
from review.selectors.gate import campaign_tasks, config_grades
from review.services.grader_gate import grader_evaluate, samples_of
from review.stats.gate_report import consensus_ratings, pred_ratings
from tests.review.test_review_import import import_groups, import_reviews

pytestmark = pytest.mark.django_db


@pytest.fixture
def experts(shared_data: Path, tmp_path: Path) -> Campaign:
    """The 16 real SWE-bench groups and both expert reviews, as one imported campaign."""
    import_groups(shared_data, tmp_path)
    for rater in ("rater-1.jsonl", "rater-2.jsonl"):
        import_reviews(shared_data / "reviews" / rater, "--campaign", "experts")
    return Campaign.objects.get(name="experts")


def run(*args: Any) -> str:
    out = StringIO()
    call_command(*map(str, args), stdout=out)
    return out.getvalue()


def test_the_campaign_reads_as_the_shared_review_files(experts: Campaign) -> None:
    tasks = campaign_tasks(campaigns=[experts])
    assert len(tasks) == 16 and sum(len(t.patches) for t in tasks) == 63
    assert all(len(t.labels) == 2 for t in tasks)
    assert all(t.reference_patch.strip() for t in tasks)


def test_grader_fit_on_the_imported_reviews_reproduces_the_shipped_fit(experts: Campaign) -> None:
    """The same labels through the database give the shipped fit's weights, cuts and
    leave-one-task-out figures: the command is the one-command refit on a team's own labels."""
    config = GraderConfig.objects.create(name="team", backend="analysis")
    out = run("grader_fit", "--config", "team", "--campaign", "experts", "--resamples", 50)
    stored = GraderFit.objects.get(config=config)
    fit = Fit.from_dict(stored.fit)
    shipped = load_default_fit()
    for mode in ("reference", "consensus"):
        mine, theirs = fit.model(mode), shipped.model(mode)
        assert mine.weights == pytest.approx(theirs.weights, abs=2e-6)  # rounded to 1e-6
        assert mine.cuts == pytest.approx(theirs.cuts, abs=2e-6)
    assert stored.held_out["reference"] == shipped.held_out["reference"]
    assert fit.trained_on["task_ids"] and stored.campaigns == ["experts"]
    assert f"stored fit {stored.version}" in out
    assert "held out (leave-one-task-out, whole tasks)" in out
    # The table: against the consensus, each reviewer, the reviewers against each other and
    # the floor, with intervals.
    assert "| team | consensus | 63 | 0.733 [" in out
    assert out.count("| team | ") == 3
    assert "| smaller diff | consensus |" in out and "| random (mean of draws) |" in out
    # The configuration now grades with its stored fit.
    assert backend_for(config).model == f"analysis:{stored.version}"  # type: ignore[attr-defined]
    assert grader_fit_version(config=config) == stored.version
    # Fitting again on the same labels gives the same fit, made current again.
    run("grader_fit", "--config", "team", "--campaign", "experts", "--resamples", 10)
    assert GraderFit.objects.filter(config=config).count() == 1


def test_grader_eval_measures_a_configurations_runs_and_the_figures_check_out(
    experts: Campaign,
) -> None:
    config = GraderConfig.objects.create(name="shipped", backend="analysis")
    with pytest.raises(CommandError, match="no succeeded run"):
        run("grader_eval", "--config", "shipped", "--against", "experts", "--resamples", 10)
    out = run("grader_eval", "--config", "shipped", "--against", "experts", "--grade",
              "--resamples", 100)  # fmt: skip
    runs = GraderRun.objects.filter(config=config)
    assert runs.count() == 16 and all(r.status == "succeeded" for r in runs)
    assert all(r.fit_version == load_default_fit().version for r in runs)
    assert "its grader runs" in out and "not graded" not in out

    # κ against the consensus, recomputed with scikit-learn from the same grades.
    tasks = campaign_tasks(campaigns=[experts])
    samples = samples_of(tasks)
    preds = config_grades(config=config, campaigns=[experts])
    assert len(preds) == 63
    report = grader_evaluate(config=config, campaign_names=["experts"], n_resamples=10)
    cons = np.asarray(consensus_ratings(samples).tier, dtype=int)
    mine = np.asarray(pred_ratings(samples, preds).tier, dtype=int)
    want = cohen_kappa_score(cons, mine, weights="quadratic", labels=[1, 2, 3])
    assert report.against_consensus.estimate("kappa") == pytest.approx(want, abs=1e-12)
    # The ceiling: reviewer against reviewer, as in the README (κ 0.96).
    (ceiling,) = [r for r in report.rows if r.grader != "shipped" and r.reference != "consensus"]
    assert ceiling.estimate("kappa") == pytest.approx(0.96, abs=0.01)
    # In-sample (the shipped fit saw these tasks), so at least its held-out figures.
    assert report.against_consensus.estimate("kappa") >= 0.7


def test_approval_needs_a_campaign_the_fit_never_saw(experts: Campaign) -> None:
    GraderConfig.objects.create(name="team", backend="analysis")
    run("grader_fit", "--config", "team", "--campaign", "experts", "--resamples", 10)
    with pytest.raises(CommandError, match="gold campaign must be one it was not fitted on"):
        run("grader_eval", "--config", "team", "--against", "experts", "--approve")
    # The same tasks under another campaign name are refused too.
    Campaign.objects.filter(name="experts").update(name="renamed")
    with pytest.raises(CommandError, match="tasks it never saw"):
        run("grader_eval", "--config", "team", "--against", "renamed", "--approve")
    assert not GraderApproval.objects.exists()


def test_the_shipped_fit_is_not_approved_on_the_reviews_it_was_fitted_on(experts: Campaign) -> None:
    # The shipped fit is made from these 16 reviewed groups: measured on them it is in-sample,
    # and was approved for training on its own training data.
    GraderConfig.objects.create(name="shipped", backend="analysis")
    with pytest.raises(CommandError, match="fit was made on 16 of these tasks"):
        run("grader_eval", "--config", "shipped", "--against", "experts", "--approve",
            "--grade", "--resamples", 10)  # fmt: skip
    assert not GraderApproval.objects.exists()
    out = run("grader_eval", "--config", "shipped", "--against", "experts", "--grade",
              "--resamples", 10)  # fmt: skip
    assert "in-sample: the fit was made on 16 of these 16 tasks" in out


def test_the_shipped_fit_is_approved_on_its_leave_one_task_out_figures(settings: Any) -> None:
    config = GraderConfig.objects.create(name="default:analysis", backend="analysis")
    assert not grader_approval_state(config=config).approved
    out = run("grader_eval", "--config", "default:analysis", "--approve", "--shipped-fit",
              "--by", "lead")  # fmt: skip
    assert "APPROVED for training" in out and "leave-one-task-out" in out
    state = grader_approval_state(config=config)
    assert state.approved and state.basis == "leave_one_task_out"
    approval = GraderApproval.objects.get()
    assert approval.figures["stats"]["kappa"]["estimate"] == pytest.approx(0.7329)
    assert approval.decided_by == "lead"
    # Stricter thresholds: the decision is recorded, and it is not an approval.
    settings.GAGAR_GATE_MIN_CONCORDANCE = 0.95
    out = run("grader_eval", "--config", "default:analysis", "--approve", "--shipped-fit")
    assert "NOT APPROVED" in out and "concordance 0.905 < 0.95" in out
    state = grader_approval_state(config=config)
    assert not state.approved and "concordance" in state.reason


def test_a_refit_withdraws_the_approval_until_it_passes_again(experts: Campaign) -> None:
    config = GraderConfig.objects.create(name="team", backend="analysis")
    run("grader_eval", "--config", "team", "--approve", "--shipped-fit")
    assert grader_approval_state(config=config).approved
    run("grader_fit", "--config", "team", "--campaign", "experts", "--resamples", 10)
    state = grader_approval_state(config=config)
    assert not state.approved and "not the current fit" in state.reason


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["grader_fit", "--config", "nope", "--campaign", "experts"], "unknown grader config"),
        (["grader_fit", "--config", "heur", "--campaign", "experts"], "only analysis"),
        (["grader_fit", "--config", "an", "--campaign", "missing"], "unknown campaign"),
        (["grader_fit", "--config", "an", "--campaign", "empty"], "no submitted tier labels"),
        (["grader_fit", "--config", "an", "--campaign", "experts", "--resamples", 0], "at least"),
        (["grader_eval", "--config", "an"], "--against"),
        (["grader_eval", "--config", "an", "--shipped-fit"], "basis for --approve"),
        (["grader_eval", "--config", "heur", "--approve", "--shipped-fit"], "shipped fit"),
        (["grader_eval", "--config", "an", "--against", "empty"], "no submitted tier labels"),
    ],
)
def test_bad_input_is_refused_with_a_clear_error_and_nothing_stored(
    args: list[Any], message: str
) -> None:
    from tests.factories import StaffFactory

    GraderConfig.objects.create(name="heur", backend="heuristic")
    GraderConfig.objects.create(name="an", backend="analysis")
    Campaign.objects.create(name="empty", created_by=StaffFactory.create())
    with pytest.raises(CommandError, match=message):
        run(*args)
    assert not GraderFit.objects.exists() and not GraderApproval.objects.exists()


def test_fits_and_decisions_show_in_the_admin_and_verdicts_carry_their_fit(
    experts: Campaign, client: Any
) -> None:
    from rest_framework.test import APIClient

    from grading.services.tokens import api_token_create
    from tests.factories import ServiceAccountFactory, StaffFactory

    config = GraderConfig.objects.create(name="team", backend="analysis")
    run("grader_fit", "--config", "team", "--campaign", "experts", "--resamples", 10)
    run("grader_eval", "--config", "team", "--against", "experts", "--grade", "--resamples", 10)
    fit = GraderFit.objects.get()
    GraderApproval.objects.create(
        config=config, fit_version=fit.version, basis="gold", campaigns=["<b>gold</b>"],
        thresholds={"kappa": 0.65}, figures={"stats": {}}, passed=False, failures=["kappa"],
    )  # fmt: skip
    client.force_login(StaffFactory.create(is_superuser=True))
    page = client.get(f"/admin/grading/graderfit/{fit.pk}/change/").content.decode()
    assert fit.version in page and "lint_new" in page and "held-out figures" in page.lower()
    page = client.get("/admin/grading/graderapproval/").content.decode()
    assert "&lt;b&gt;gold&lt;/b&gt;" in page and "<b>gold</b>" not in page
    page = client.get("/admin/grading/graderconfig/").content.decode()
    assert fit.version in page and "did not pass" in page

    user = ServiceAccountFactory.create(username="reader")
    _, secret = api_token_create(user=user, name="t", scopes=("read",))
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {secret}")
    group = GraderRun.objects.filter(config=config).first().group  # type: ignore[union-attr]
    body = api.get(f"/api/v1/groups/{group.pk}/verdicts").json()
    (verdict,) = [v for v in body["results"] if v["config"] == "team"]
    assert verdict["fit_version"] == fit.version
    assert verdict["analysis_fit"]["version"] == fit.version
    assert verdict["analysis_fit"]["reference"]["weights"] == fit.fit["reference"]["weights"]
