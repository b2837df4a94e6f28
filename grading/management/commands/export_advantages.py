"""`manage.py export_advantages --run R [--step N] --format parquet|jsonl|csv --out DIR`."""

from __future__ import annotations

from argparse import ArgumentParser
from collections.abc import Callable
from typing import Any

from django.core.management.base import CommandError

from grading.management.export_command import ExportCommand
from grading.models import GraderConfig, Group
from grading.services.advantages import AdvantageParams
from grading.services.exports import ExportResult, advantages_export
from grading.services.grader_runs import grader_config_for


def _lambda_max(value: str) -> float | None:
    return None if value.lower() == "none" else float(value)


class Command(ExportCommand):
    help = (
        "Export gagar.v2 advantages of a run (or one step): attempts, groups, λ-cap report, "
        "each table with its JSON Schema, plus a dataset card and manifest.json."
    )
    kind = "advantages"
    unit = "group"

    def add_export_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument("--run", required=True, help="run name")
        parser.add_argument(
            "--step", type=int, default=None, help="export this step only (default: every step)"
        )
        parser.add_argument(
            "--config",
            default=None,
            help="grader configuration by name (default: the one the GAGAR_GRADER_* settings name)",
        )
        parser.add_argument(
            "--lambda-max",
            type=_lambda_max,
            default=1.5,
            help="the λ cap (default 1.5), or 'none' for uncapped",
        )
        parser.add_argument(
            "--normalize-std",
            action="store_true",
            help="divide A and A′ by the group's reward std (after redistribution), as GRPO",
        )
        parser.add_argument(
            "--std-ddof",
            type=int,
            choices=[0, 1],
            default=0,
            help="with --normalize-std: 0 = population std (NumPy, default), 1 = sample std "
            "(PyTorch's .std())",
        )

    def prepare(self, opts: dict[str, Any]) -> int:
        try:
            opts["config"] = grader_config_for(name=opts["config"])
        except GraderConfig.DoesNotExist as exc:
            raise CommandError(f"unknown grader configuration {opts['config']!r}") from exc
        try:
            opts["params"] = AdvantageParams(
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
        return total

    def export(self, opts: dict[str, Any], progress: Callable[[int], None]) -> ExportResult:
        return advantages_export(
            run_name=opts["run"],
            step=opts["step"],
            fmt=opts["format"],
            out_dir=opts["out"],
            config=opts["config"],
            params=opts["params"],
            on_groups=progress,
        )

    def summary(self, result: ExportResult) -> str:
        c = result.counts
        return (
            f"wrote {c['attempts']} attempt rows and {c['groups']} group rows "
            f"({c['fallback_groups']} fallback, {c['capped_groups']} capped) to {result.directory}"
        )
