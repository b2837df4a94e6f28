"""`manage.py export_labels --format parquet|jsonl|csv --out DIR [--config NAME] [filters]`."""

from __future__ import annotations

from argparse import ArgumentParser
from collections.abc import Callable
from typing import Any

from django.core.management.base import CommandError

from grading.domain.wording import plural
from grading.management.export_command import ExportCommand
from grading.models import Attempt, GraderConfig
from grading.selectors.training import grader_config_by_name
from grading.services.exports import ExportResult
from review.analytics.exports import labels_export
from review.analytics.filters import Filters
from review.selectors.reviewing import campaign_by_name_or_id


class FilteredExportCommand(ExportCommand):
    """An export over attempts chosen by run, step, repository and campaign."""

    unit = "attempt"

    def add_export_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument("--run", default=None, help="only this run (by name)")
        parser.add_argument("--step", type=int, default=None, help="only this step")
        parser.add_argument("--repo", default=None, help="only this repository (owner/name)")
        parser.add_argument(
            "--campaign", default=None, help="only this campaign (its name, or its id)"
        )

    def prepare(self, opts: dict[str, Any]) -> int:
        if opts["campaign"] is not None:
            # By name, as `import reviews --campaign` and `grader_fit --campaign` take it.
            campaign = campaign_by_name_or_id(ref=opts["campaign"])
            if campaign is None:
                raise CommandError(f"--campaign: no campaign named {opts['campaign']!r}")
            opts["campaign"] = campaign.pk
        opts["filters"] = Filters(
            run=opts["run"], step=opts["step"], repo=opts["repo"], campaign=opts["campaign"]
        )
        total = Attempt.objects.filter(opts["filters"].group_q("group__")).count()
        if not total:
            raise CommandError("no attempts match these filters")
        return total


class Command(FilteredExportCommand):
    help = (
        "Export calibrated tier labels (gagar.labels.v2: one row per attempt and grader "
        "configuration), with the table's JSON Schema, a dataset card and manifest.json."
    )
    kind = "labels"

    def add_export_arguments(self, parser: ArgumentParser) -> None:
        super().add_export_arguments(parser)
        parser.add_argument(
            "--config", default=None, help="one grader configuration (default: all of them)"
        )

    def prepare(self, opts: dict[str, Any]) -> int:
        name = opts["config"]
        try:
            opts["config"] = grader_config_by_name(name=name) if name else None
        except GraderConfig.DoesNotExist as exc:
            raise CommandError(f"unknown grader configuration {name!r}") from exc
        return super().prepare(opts)

    def export(self, opts: dict[str, Any], progress: Callable[[int], None]) -> ExportResult:
        return labels_export(
            fmt=opts["format"],
            out_dir=opts["out"],
            filters=opts["filters"],
            config=opts["config"],
            on_attempts=progress,
        )

    def summary(self, result: ExportResult) -> str:
        c = result.counts
        return (
            f"wrote {plural(c['rows'], 'label row')} for {plural(c['attempts'], 'attempt')} "
            f"({c['reviewed_attempts']} reviewed, {c['calibrated_rows']} calibrated) "
            f"to {result.directory}"
        )
