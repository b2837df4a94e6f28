"""The gate table as the `grader_fit` and `grader_eval` commands print it (plain Markdown)."""

from __future__ import annotations

from django.core.management.base import CommandError

from grading.domain.wording import plural
from grading.models import GraderConfig
from grading.selectors.training import grader_config_by_name
from grading.services.grader_runs import grader_config_default
from review.services.grader_gate import GateReport
from review.stats.bootstrap import BootstrapCI

COLUMNS = ("kappa", "concordance", "t3_recall", "exact", "alpha", "tau_b", "top1")


def config_named(name: str) -> GraderConfig:
    """A configuration by name; `default` is the server's default one (made if need be)."""
    if name == "default":
        return grader_config_default()
    try:
        return grader_config_by_name(name=name)
    except GraderConfig.DoesNotExist as exc:
        raise CommandError(f"unknown grader configuration {name!r}") from exc


def _cell(ci: BootstrapCI | None) -> str:
    if ci is None or ci.estimate is None:
        return "—"
    if ci.low is None or ci.high is None or ci.n_resamples <= 1:
        return f"{ci.estimate:.3f}"
    return f"{ci.estimate:.3f} [{ci.low:.2f}, {ci.high:.2f}]"


def render(report: GateReport) -> str:
    head = (
        f"{report.config} on {', '.join(report.campaigns)}: {plural(report.tasks, 'task')}, "
        f"{plural(report.candidates, 'distinct passing patch', 'distinct passing patches')}; "
        f"the grader's figures are {report.kind}; "
        "task-bootstrap 95% intervals"
    )
    lines = [head]
    if report.fitted_tasks:
        lines.append(
            f"in-sample: the fit was made on {report.fitted_tasks} of these "
            f"{plural(report.tasks, 'task')}, so its figures here are not held out"
        )
    lines += ["", "| grader | against | n | " + " | ".join(COLUMNS) + " |"]
    lines.append("|---" * (len(COLUMNS) + 3) + "|")
    for row in report.rows:
        cells = " | ".join(_cell(row.stats.get(c)) for c in COLUMNS)
        lines.append(f"| {row.grader} | {row.reference} | {row.n} | {cells} |")
    if report.random:
        cells = " | ".join(
            f"{report.random[c]:.3f}" if c in report.random else "—" for c in COLUMNS
        )
        lines.append(f"| random (mean of draws) | consensus | {report.candidates} | {cells} |")
    chance = report.against_consensus.stats.get("top1_chance")
    if chance is not None and chance.estimate is not None:
        lines.append(f"\ntop-1 chance level: {chance.estimate:.3f}")
    if report.ungraded_groups:
        lines.append(
            f"{plural(len(report.ungraded_groups), 'group')} not graded by {report.config}: their "
            "candidates count as not rated (pass --grade to grade them)"
        )
    return "\n".join(lines)
