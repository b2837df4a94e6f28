"""The one scaffold of the export commands (`export_advantages`, `export_labels`,
`export_package`): the shared flags, the progress bar, invariant failures as command errors and
the summary line (the export services write the log event). Each command says what it counts,
how to export and what to print."""

from __future__ import annotations

from abc import abstractmethod
from argparse import ArgumentParser
from collections.abc import Callable
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError
from tqdm import tqdm

from grading.services.exports import FORMATS, ExportInvariantError, ExportResult


class ExportCommand(BaseCommand):
    kind: str = "export"
    unit: str = "row"

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument(
            "--out", type=Path, required=True, help="output directory (created if missing)"
        )
        parser.add_argument(
            "--format",
            choices=FORMATS,
            default="parquet",
            help="file format of the tables (default: parquet); every format comes with a "
            "JSON Schema per table and a dataset card",
        )
        parser.add_argument(
            "--no-progress", action="store_true", help="no progress bar on stderr (logs, CI)"
        )
        self.add_export_arguments(parser)

    def add_export_arguments(self, parser: ArgumentParser) -> None:
        """The command's own flags."""

    @abstractmethod
    def prepare(self, opts: dict[str, Any]) -> int:
        """Check the options; return how many units the bar counts (CommandError if none)."""

    @abstractmethod
    def export(self, opts: dict[str, Any], progress: Callable[[int], None]) -> ExportResult: ...

    @abstractmethod
    def summary(self, result: ExportResult) -> str: ...

    def handle(self, *args: Any, **opts: Any) -> None:
        total = self.prepare(opts)
        bar = tqdm(total=total, unit=self.unit, disable=opts["no_progress"], file=self.stderr)

        def progress(n: int) -> None:
            bar.update(n)

        try:
            result = self.export(opts, progress)
        except ExportInvariantError as exc:
            raise CommandError(f"export refused, invariant violated: {exc}") from exc
        finally:
            bar.close()
        self.stdout.write(self.summary(result))
