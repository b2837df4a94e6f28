"""`manage.py export_labels --format parquet|jsonl|csv --out DIR [--config NAME] [filters]`."""

from __future__ import annotations

from argparse import ArgumentParser
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError
from tqdm import tqdm

from grading.models import Attempt, GraderConfig
from grading.selectors.training import grader_config_by_name
from grading.services.exports import FORMATS
from review.analytics.exports import labels_export
from review.analytics.filters import Filters


def add_filter_arguments(parser: ArgumentParser) -> None:
    parser.add_argument("--run", default=None, help="run name")
    parser.add_argument("--step", type=int, default=None)
    parser.add_argument("--repo", default=None, help="repository owner/name")
    parser.add_argument("--campaign", type=int, default=None, help="campaign id")
    parser.add_argument("--out", type=Path, required=True, help="output directory")
    parser.add_argument("--format", choices=FORMATS, default="parquet")
    parser.add_argument("--no-progress", action="store_true")


def filters_from(opts: dict[str, Any]) -> tuple[Filters, int]:
    filters = Filters(
        run=opts["run"], step=opts["step"], repo=opts["repo"], campaign=opts["campaign"]
    )
    total = Attempt.objects.filter(filters.group_q("group__")).count()
    if not total:
        raise CommandError("no attempts match these filters")
    return filters, total


class Command(BaseCommand):
    help = "Export calibrated tier labels (one row per attempt and grader configuration)."

    def add_arguments(self, parser: ArgumentParser) -> None:
        add_filter_arguments(parser)
        parser.add_argument("--config", default=None, help="one grader configuration (default all)")

    def handle(self, *args: Any, **opts: Any) -> None:
        config = None
        if opts["config"]:
            try:
                config = grader_config_by_name(name=opts["config"])
            except GraderConfig.DoesNotExist as exc:
                raise CommandError(f"unknown grader configuration {opts['config']!r}") from exc
        filters, total = filters_from(opts)
        bar = tqdm(total=total, unit="attempt", disable=opts["no_progress"], file=self.stderr)

        def progress(n: int) -> None:
            bar.update(n)

        try:
            result = labels_export(
                fmt=opts["format"],
                out_dir=opts["out"],
                filters=filters,
                config=config,
                on_attempts=progress,
            )
        finally:
            bar.close()
        c = result.counts
        self.stdout.write(
            f"wrote {c['rows']} label rows for {c['attempts']} attempts "
            f"({c['reviewed_attempts']} reviewed, {c['calibrated_rows']} calibrated) "
            f"to {result.directory}"
        )
