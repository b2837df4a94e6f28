"""`manage.py grader_fit --config NAME --campaign C [C …]`: fit the analysis grader on labels."""

from __future__ import annotations

from argparse import ArgumentParser
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from review.management.gate_output import config_named, render
from review.selectors.gate import GateInputError
from review.services.grader_gate import grader_fit_create


class Command(BaseCommand):
    help = (
        "Fit an analysis configuration's weights and tier cuts on campaigns' submitted (or "
        "imported) labels, store the fit as its current one and print its held-out figures "
        "(leave-one-task-out: whole tasks held out)."
    )

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument("--config", required=True, help="a configuration name, or default")
        parser.add_argument("--campaign", nargs="+", required=True, help="campaign names")
        parser.add_argument("--resamples", type=int, default=2000, help="bootstrap resamples")

    def handle(self, *args: Any, **opts: Any) -> None:
        config = config_named(opts["config"])
        if opts["resamples"] < 1:
            raise CommandError("--resamples must be at least 1")
        try:
            report = grader_fit_create(
                config=config, campaign_names=opts["campaign"], n_resamples=opts["resamples"]
            )
        except GateInputError as exc:
            raise CommandError(str(exc)) from exc
        assert report.fit is not None
        self.stdout.write(f"stored fit {report.fit.version} as {config.name}'s current fit")
        self.stdout.write(render(report))
