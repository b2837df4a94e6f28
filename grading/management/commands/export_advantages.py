"""`manage.py export_advantages --run R [--step N] --format parquet|jsonl|csv --out DIR`."""

from __future__ import annotations

from argparse import ArgumentParser
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError
from tqdm import tqdm

from grading.models import GraderConfig, Group
from grading.services.advantages import AdvantageParams
from grading.services.exports import FORMATS, ExportInvariantError, advantages_export
from grading.services.grader_runs import grader_config_for


def _lambda_max(value: str) -> float | None:
    return None if value.lower() == "none" else float(value)


class Command(BaseCommand):
    help = "Export gagar.v1 advantages of a run (or one step): attempts, groups, λ-cap report."

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument("--run", required=True, help="run name")
        parser.add_argument("--step", type=int, default=None)
        parser.add_argument("--format", choices=FORMATS, default="parquet")
        parser.add_argument("--out", type=Path, required=True, help="output directory")
        parser.add_argument("--config", default=None, help="grader configuration (default: env)")
        parser.add_argument("--lambda-max", type=_lambda_max, default=1.5, help="or 'none'")
        parser.add_argument("--normalize-std", action="store_true")
        parser.add_argument("--std-ddof", type=int, choices=[0, 1], default=0)
        parser.add_argument("--no-progress", action="store_true")

    def handle(self, *args: Any, **opts: Any) -> None:
        try:
            config = grader_config_for(name=opts["config"])
        except GraderConfig.DoesNotExist as exc:
            raise CommandError(f"unknown grader configuration {opts['config']!r}") from exc
        try:
            params = AdvantageParams(
                lambda_max=opts["lambda_max"],
                normalize_std=opts["normalize_std"],
                std_ddof=opts["std_ddof"],
            )
        except ValueError as exc:
            raise CommandError(str(exc)) from exc
        groups = Group.objects.filter(step__run__name=opts["run"])
        if opts["step"] is not None:
            groups = groups.filter(step__number=opts["step"])
        total = groups.count()
        if not total:
            raise CommandError(
                f"no groups in run {opts['run']!r}"
                + (f" step {opts['step']}" if opts["step"] is not None else "")
            )
        bar = tqdm(total=total, unit="group", disable=opts["no_progress"], file=self.stderr)

        def progress(n: int) -> None:
            bar.update(n)

        try:
            result = advantages_export(
                run_name=opts["run"],
                step=opts["step"],
                fmt=opts["format"],
                out_dir=opts["out"],
                config=config,
                params=params,
                on_groups=progress,
            )
        except ExportInvariantError as exc:
            raise CommandError(f"export refused, invariant violated: {exc}") from exc
        finally:
            bar.close()
        c = result.counts
        self.stdout.write(
            f"wrote {c['attempts']} attempt rows and {c['groups']} group rows "
            f"({c['fallback_groups']} fallback, {c['capped_groups']} capped) to {result.directory}"
        )
