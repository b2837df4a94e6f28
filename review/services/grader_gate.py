"""The grader gate: fit the analysis grader on a team's labels, measure any configuration against
people, and record whether it is approved for training.

* `grader_fit_create`: the analysis grader's weights and tier cuts fitted on campaigns' submitted
  (or imported) labels, stored as the configuration's newest `GraderFit`, with leave-one-task-out
  figures (whole tasks held out) in the gate table.
* `grader_evaluate`: a configuration's succeeded runs on campaigns' groups against the reviewers'
  consensus and each reviewer, beside the reviewers' agreement with each other (the ceiling) and
  the "smaller diff" and random baselines (the floor); optionally grading what is not graded yet.
* `grader_approve`: a decision on a gold campaign the configuration's fit never saw, against the
  deployment's thresholds; `grader_approve_shipped`: the shipped fit's decision on its own
  leave-one-task-out figures, labelled as such.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from grading.diffs import parse_patch as parse
from grading.domain.wording import plural
from grading.grader.analysis.devset import Task
from grading.grader.analysis.fit import Prediction, Sample
from grading.grader.analysis.fit_default import make_fit
from grading.grader.analysis.model import load_default_fit
from grading.models import GraderApproval, GraderConfig, GraderFit, Group
from grading.selectors.gate import grader_fit_current, grader_fit_version
from grading.services.grader_runs import grader_run_execute, grader_runs_request
from review.analysis_fit import held_out_figures
from review.selectors.gate import (
    GateInputError,
    campaign_groups_ungraded,
    campaign_tasks,
    campaigns_named,
    config_grades,
)
from review.stats.gate_report import CONSENSUS, GateRow, gate_table, threshold_failures

Preds = dict[tuple[str, str], tuple[int, int]]


def gate_thresholds() -> dict[str, float]:
    """The deployment's thresholds (settings GAGAR_GATE_MIN_*), against the consensus."""
    return {
        "kappa": float(settings.GAGAR_GATE_MIN_KAPPA),
        "concordance": float(settings.GAGAR_GATE_MIN_CONCORDANCE),
        "t3_recall": float(settings.GAGAR_GATE_MIN_T3_RECALL),
    }


@dataclass
class GateReport:
    config: str
    campaigns: list[str]
    tasks: int
    candidates: int
    rows: list[GateRow]
    random: dict[str, float]
    kind: str  # what the grader's figures are: "held out (leave-one-task-out)" or "its runs"
    ungraded_groups: list[int] = field(default_factory=list)
    fit: GraderFit | None = None
    # How many of the tasks the configuration's fit was made on: its runs' figures on them
    # are in-sample (0 for a fit's own leave-one-task-out figures).
    fitted_tasks: int = 0

    @property
    def against_consensus(self) -> GateRow:
        return self.rows[0]

    def point(self) -> dict[str, float | None]:
        return {k: ci.estimate for k, ci in self.against_consensus.stats.items()}

    def figures_json(self) -> dict[str, Any]:
        row = self.against_consensus.as_json()
        return {
            "kind": self.kind,
            "tasks": self.tasks,
            "candidates": self.candidates,
            "against": CONSENSUS,
            "stats": row["stats"],
            "ceiling": [r.as_json() for r in self.rows if r.grader != self.config][:3],
        }


def samples_of(tasks: Sequence[Task]) -> list[Sample]:
    """The candidates as the gate table reads them (labels, changed lines); no features."""
    out = []
    for t in tasks:
        for sha, text in sorted(t.patches.items()):
            labels = {r: (by[sha].tier, by[sha].rank_in_tier) for r, by in t.labels.items()
                      if sha in by}  # fmt: skip
            out.append(Sample(t.instance_id, sha, {}, labels, parse(text).changed_lines()))
    return out


def _capture(
    store: dict[str, dict[tuple[str, str], Prediction]],
) -> Callable[[Sequence[Sample], dict[tuple[str, str], Prediction]], dict[str, float]]:
    """`make_fit`'s evaluate hook, keeping each mode's held-out predictions for the table."""

    def evaluate(
        samples: Sequence[Sample], pred: dict[tuple[str, str], Prediction]
    ) -> dict[str, float]:
        store["consensus" if "reference" in store else "reference"] = dict(pred)
        return held_out_figures(samples, pred)

    return evaluate


def grader_fit_create(
    *, config: GraderConfig, campaign_names: Sequence[str], n_resamples: int = 2000
) -> GateReport:
    if config.backend != GraderConfig.Backend.ANALYSIS:
        raise GateInputError(
            f"{config.name} uses the {config.backend} backend; only analysis configurations "
            "have weights to fit"
        )
    campaigns = campaigns_named(names=campaign_names)
    tasks = campaign_tasks(campaigns=campaigns)
    if len(tasks) < 3:
        raise GateInputError(
            f"{plural(len(tasks), 'labelled task')}: a fit held out by whole tasks needs at least 3"
        )
    held: dict[str, dict[tuple[str, str], Prediction]] = {}
    fit = make_fit(
        tasks, _capture(held), name=f"campaigns-{config.pk}",
        source="campaigns: " + ", ".join(campaign_names), task_ids=True,
    )  # fmt: skip
    with_ref = {t.instance_id for t in tasks if t.reference_patch.strip()}
    preds: Preds = {
        k: (p.tier, p.rank_in_tier)
        for k, p in {**held["consensus"], **{k: v for k, v in held["reference"].items()
                                              if k[0] in with_ref}}.items()
    }  # fmt: skip
    samples = samples_of(tasks)
    rows, rnd = gate_table(samples, preds, grader=config.name, n_resamples=n_resamples)
    with transaction.atomic():
        stored, created = GraderFit.objects.get_or_create(
            config=config,
            version=fit.version,
            defaults={"fit": fit.to_dict(), "campaigns": list(campaign_names),
                      "held_out": fit.held_out},
        )  # fmt: skip
        if not created:  # the same labels again: the same fit, made current once more
            GraderFit.objects.filter(pk=stored.pk).update(created_at=timezone.now())
    return GateReport(
        config.name, list(campaign_names), len(tasks), len(samples), rows, rnd,
        "held out (leave-one-task-out, whole tasks)", fit=stored,
    )  # fmt: skip


def grader_evaluate(
    *,
    config: GraderConfig,
    campaign_names: Sequence[str],
    n_resamples: int = 2000,
    grade_missing: bool = False,
) -> GateReport:
    """The configuration's runs on the campaigns' groups against people. With `grade_missing`,
    groups it has not graded are graded here first (in this process)."""
    campaigns = campaigns_named(names=campaign_names)
    tasks = campaign_tasks(campaigns=campaigns)
    missing = campaign_groups_ungraded(config=config, campaigns=campaigns)
    if grade_missing and missing:
        runs = grader_runs_request(
            groups=Group.objects.filter(pk__in=missing), config=config, enqueue=False
        )
        for run in runs:
            grader_run_execute(run_id=run.pk, worker="grader_eval")
        missing = campaign_groups_ungraded(config=config, campaigns=campaigns)
    preds = config_grades(config=config, campaigns=campaigns)
    if not preds:
        raise GateInputError(
            f"{config.name} has no succeeded run on these campaigns' groups "
            "(grade them first, or pass --grade)"
        )
    samples = samples_of(tasks)
    rows, rnd = gate_table(samples, preds, grader=config.name, n_resamples=n_resamples)
    _, fitted = _fitted_on(config)
    return GateReport(
        config.name, list(campaign_names), len(tasks), len(samples), rows, rnd,
        "its grader runs", ungraded_groups=missing,
        fitted_tasks=len({t.instance_id for t in tasks} & fitted),
    )  # fmt: skip


def _fitted_on(config: GraderConfig) -> tuple[set[str], set[str]]:
    """(campaign names, task ids) the configuration's current fit was made from: the stored
    one, else (an analysis configuration) the shipped fit, made from the shared reviews."""
    fit = grader_fit_current(config=config)
    if fit is None:
        if config.backend != GraderConfig.Backend.ANALYSIS:
            return set(), set()
        return set(), set(load_default_fit().trained_on.get("task_ids", []))
    trained = (fit.fit or {}).get("trained_on", {})
    return set(fit.campaigns or []), set(trained.get("task_ids", []))


def grader_approve(
    *,
    config: GraderConfig,
    campaign_names: Sequence[str],
    decided_by: str = "",
    n_resamples: int = 2000,
    grade_missing: bool = False,
) -> tuple[GraderApproval, GateReport]:
    """Decide on a gold campaign: refused when the fit saw any of its campaigns or tasks."""
    names, task_ids = _fitted_on(config)
    overlap = sorted(set(campaign_names) & names)
    if overlap:
        raise GateInputError(
            f"{config.name}'s fit was made from {', '.join(overlap)}: a gold campaign must be one "
            "it was not fitted on"
        )
    tasks = campaign_tasks(campaigns=campaigns_named(names=campaign_names))
    seen = sorted({t.instance_id for t in tasks} & task_ids)
    if seen:
        raise GateInputError(
            f"{config.name}'s fit was made on {len(seen)} of these tasks ({', '.join(seen[:3])}"
            f"{'…' if len(seen) > 3 else ''}): a gold campaign must hold tasks it never saw"
        )
    report = grader_evaluate(
        config=config, campaign_names=campaign_names, n_resamples=n_resamples,
        grade_missing=grade_missing,
    )  # fmt: skip
    thresholds = gate_thresholds()
    failures = threshold_failures(report.point(), thresholds)
    if report.ungraded_groups:
        ungraded = plural(len(report.ungraded_groups), "group")
        failures.append(f"{ungraded} of the campaign not graded")
    approval = GraderApproval.objects.create(
        config=config,
        fit_version=grader_fit_version(config=config),
        basis=GraderApproval.Basis.GOLD,
        campaigns=list(campaign_names),
        thresholds=thresholds,
        figures=report.figures_json(),
        passed=not failures,
        failures=failures,
        decided_by=decided_by[:150],
    )
    return approval, report


def grader_approve_shipped(*, config: GraderConfig, decided_by: str = "") -> GraderApproval:
    """The shipped fit's decision on its stored leave-one-task-out figures (reference mode)."""
    if config.backend != GraderConfig.Backend.ANALYSIS or grader_fit_current(config=config):
        raise GateInputError(
            f"{config.name} does not grade with the shipped fit; approve it on a gold campaign"
        )
    fit = load_default_fit()
    figures = dict(fit.held_out.get("reference", {}))
    thresholds = gate_thresholds()
    failures = threshold_failures(figures, thresholds)
    return GraderApproval.objects.create(
        config=config,
        fit_version=fit.version,
        basis=GraderApproval.Basis.LEAVE_ONE_TASK_OUT,
        campaigns=[],
        thresholds=thresholds,
        figures={
            "kind": fit.held_out.get("kind", "leave-one-task-out"),
            "trained_on": fit.trained_on,
            "stats": {k: {"estimate": v, "low": None, "high": None} for k, v in figures.items()},
        },
        passed=not failures,
        failures=failures,
        decided_by=decided_by[:150],
    )
