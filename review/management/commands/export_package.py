"""`manage.py export_package --format parquet|jsonl|csv --out DIR [filters]`: the anonymized
data package, loadable with Hugging Face `datasets`."""

from __future__ import annotations

from argparse import ArgumentParser
from typing import Any

from django.core.management.base import BaseCommand
from tqdm import tqdm

from review.analytics.label_refresh import labels_refresh, labels_stale
from review.analytics.package import package_export
from review.management.commands.export_labels import add_filter_arguments, filters_from


class Command(BaseCommand):
    help = (
        "Export the anonymized data package: tasks, trajectories, diffs, tests, verdicts, reviews."
    )

    def add_arguments(self, parser: ArgumentParser) -> None:
        add_filter_arguments(parser)

    def handle(self, *args: Any, **opts: Any) -> None:
        filters, total = filters_from(opts)
        if labels_stale():
            labels_refresh()  # the package carries the consensus tier
        bar = tqdm(total=total, unit="attempt", disable=opts["no_progress"], file=self.stderr)

        def progress(n: int) -> None:
            bar.update(n)

        try:
            result = package_export(
                fmt=opts["format"],
                out_dir=opts["out"],
                filters=filters,
                on_attempts=progress,
            )
        finally:
            bar.close()
        c = result.counts
        self.stdout.write(
            f"wrote {c['attempts']} attempts of {c['groups']} groups ({c['tasks']} tasks) "
            f"to {result.directory}"
        )
