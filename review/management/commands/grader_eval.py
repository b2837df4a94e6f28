"""`manage.py grader_eval --config NAME --against C [C …] [--grade] [--approve]`."""

from __future__ import annotations

from argparse import ArgumentParser
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from review.management.gate_output import config_named, render
from review.selectors.gate import GateInputError
from review.services.grader_gate import (
    grader_approve,
    grader_approve_shipped,
    grader_evaluate,
)


class Command(BaseCommand):
    help = (
        "Measure a grader configuration's runs against campaigns' labels: against the reviewers' "
        "consensus and each reviewer, beside the reviewers' agreement with each other and the "
        "'smaller diff' and random baselines. --approve records a gate decision on a gold "
        "campaign the configuration was not fitted on (--shipped-fit: the shipped fit's own "
        "leave-one-task-out figures)."
    )

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument("--config", required=True, help="a configuration name, or default")
        parser.add_argument("--against", nargs="+", default=[], help="campaign names")
        parser.add_argument("--grade", action="store_true", help="grade ungraded groups first")
        parser.add_argument("--approve", action="store_true", help="record a gate decision")
        parser.add_argument(
            "--shipped-fit", action="store_true",
            help="with --approve: decide on the shipped fit's leave-one-task-out figures",
        )  # fmt: skip
        parser.add_argument("--resamples", type=int, default=2000, help="bootstrap resamples")
        parser.add_argument("--by", default="", help="who decides (recorded with --approve)")

    def handle(self, *args: Any, **opts: Any) -> None:
        config = config_named(opts["config"])
        if opts["resamples"] < 1:
            raise CommandError("--resamples must be at least 1")
        if opts["shipped_fit"] and not opts["approve"]:
            raise CommandError("--shipped-fit is a basis for --approve")
        if not opts["shipped_fit"] and not opts["against"]:
            raise CommandError("name the campaign(s) to measure against: --against C [C …]")
        try:
            if opts["shipped_fit"]:
                approval = grader_approve_shipped(config=config, decided_by=opts["by"])
                self._decision(approval)
                return
            if opts["approve"]:
                approval, report = grader_approve(
                    config=config, campaign_names=opts["against"], decided_by=opts["by"],
                    n_resamples=opts["resamples"], grade_missing=opts["grade"],
                )  # fmt: skip
                self.stdout.write(render(report))
                self._decision(approval)
                return
            report = grader_evaluate(
                config=config, campaign_names=opts["against"], n_resamples=opts["resamples"],
                grade_missing=opts["grade"],
            )  # fmt: skip
        except (GateInputError, ValueError) as exc:
            raise CommandError(str(exc)) from exc
        self.stdout.write(render(report))

    def _decision(self, approval: Any) -> None:
        limits = ", ".join(f"{k} ≥ {v:g}" for k, v in sorted(approval.thresholds.items()))
        if approval.passed:
            self.stdout.write(
                f"APPROVED for training: {approval.config.name} ({approval.get_basis_display()}; "
                f"thresholds {limits})"
            )
        else:
            self.stdout.write(
                f"NOT APPROVED: {approval.config.name}: {'; '.join(approval.failures)} "
                f"(thresholds {limits}); recorded all the same"
            )
