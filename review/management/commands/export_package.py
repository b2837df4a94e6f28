"""`manage.py export_package --format parquet|jsonl|csv --out DIR [filters]`: the anonymized
data package, a Hugging Face dataset (`datasets.load_dataset(DIR)`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from grading.domain.wording import plural
from grading.services.exports import ExportResult
from review.analytics.package import package_export
from review.management.commands.export_labels import FilteredExportCommand


class Command(FilteredExportCommand):
    help = (
        "Export the anonymized data package (gagar.package.v2): tasks, trajectories, diffs, "
        "tests, verdicts and reviews per attempt, as a Hugging Face dataset with its card."
    )
    kind = "package"

    def export(self, opts: dict[str, Any], progress: Callable[[int], None]) -> ExportResult:
        return package_export(
            fmt=opts["format"], out_dir=opts["out"], filters=opts["filters"], on_attempts=progress
        )

    def summary(self, result: ExportResult) -> str:
        c = result.counts
        return (
            f"wrote {plural(c['attempts'], 'attempt')} of {plural(c['groups'], 'group')} "
            f"({plural(c['tasks'], 'task')}) "
            f"to {result.directory}"
        )
