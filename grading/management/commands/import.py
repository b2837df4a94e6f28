"""`manage.py import bundle|swebench …` — import rollouts with a progress bar and a summary."""

from __future__ import annotations

from argparse import ArgumentParser
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError
from tqdm import tqdm

from grading.domain.swebench import SystemSource, read_groups
from grading.services.imports import ImportFailedError, ImportReport, groups_import
from grading.services.sources import bundle_records


class Command(BaseCommand):
    help = "Import groups of attempts: a gagar.group.v1 bundle or SWE-bench predictions."

    def add_arguments(self, parser: ArgumentParser) -> None:
        sub = parser.add_subparsers(dest="format", required=True)
        bundle = sub.add_parser("bundle", help="a gagar.group.v1 JSON Lines file")
        bundle.add_argument("path", type=Path)
        swe = sub.add_parser(
            "swebench",
            help="task records + per system: predictions, evaluation report, trajectories",
        )
        swe.add_argument("--tasks", type=Path, required=True, help="JSONL or JSON array")
        swe.add_argument(
            "--predictions",
            type=Path,
            action="append",
            required=True,
            help="one per system (JSONL or JSON array); repeat for several systems",
        )
        swe.add_argument(
            "--report",
            type=Path,
            action="append",
            default=[],
            help="the evaluation report of the predictions at the same position: a run-level "
            "report.json with a `resolved` list, or a folder of per-instance report.json files",
        )
        swe.add_argument("--label", action="append", default=[], help="system name, by position")
        swe.add_argument(
            "--trajectories",
            type=Path,
            action="append",
            default=[],
            help="folder of <instance_id>.traj/.json files, by position",
        )
        swe.add_argument("--run", default="swebench")
        swe.add_argument("--step", type=int, default=0)
        for p in (bundle, swe):
            p.add_argument(
                "--partial",
                action="store_true",
                help="import the valid groups and report the rest (default: all or nothing)",
            )
            p.add_argument(
                "--replace",
                action="store_true",
                help="overwrite groups and tasks whose content changed",
            )
            p.add_argument("--no-progress", action="store_true")

    def handle(self, *args: Any, **options: Any) -> None:
        bundle = options["format"] == "bundle"
        report = self._bundle(options) if bundle else self._swebench(options)
        for problem in report.problems:
            self.stderr.write(f"  {problem}")
        self.stdout.write(report.summary())
        if report.problems and not options["partial"]:
            raise CommandError("import failed; nothing was written")

    def _run(self, records: Any, options: dict[str, Any], bar: tqdm[Any]) -> ImportReport:
        try:
            return groups_import(
                records=records, partial=options["partial"], replace=options["replace"]
            )
        except ImportFailedError as exc:
            return exc.report
        finally:
            bar.close()

    def _bundle(self, options: dict[str, Any]) -> ImportReport:
        path: Path = options["path"]
        if not path.is_file():
            raise CommandError(f"{path}: no such file")
        size = path.stat().st_size
        with path.open("rb") as handle:
            reader, records = bundle_records(stream=handle, source=str(path), base_dir=path.parent)
            bar = tqdm(
                total=size,
                unit="B",
                unit_scale=True,
                desc="import",
                disable=options["no_progress"],
                file=self.stderr,
            )

            def stream() -> Any:
                seen = 0
                for item in records:
                    bar.update(reader.bytes_read - seen)
                    seen = reader.bytes_read
                    yield item

            return self._run(stream(), options, bar)

    def _swebench(self, options: dict[str, Any]) -> ImportReport:
        predictions: list[Path] = options["predictions"]
        for name in ("report", "label", "trajectories"):
            if options[name] and len(options[name]) != len(predictions):
                raise CommandError(f"give one --{name} per --predictions (or none)")
        systems = [
            SystemSource(
                predictions=p,
                report=options["report"][i] if options["report"] else None,
                label=options["label"][i] if options["label"] else None,
                trajectories=options["trajectories"][i] if options["trajectories"] else None,
            )
            for i, p in enumerate(predictions)
        ]
        for path in [options["tasks"], *predictions, *options["report"]]:
            if not path.exists():
                raise CommandError(f"{path}: no such file or folder")
        bar = tqdm(unit="group", desc="import", disable=options["no_progress"], file=self.stderr)
        records = read_groups(
            tasks_path=options["tasks"], systems=systems, run=options["run"], step=options["step"]
        )

        def stream() -> Any:
            for item in records:
                bar.update(1)
                yield item

        return self._run(stream(), options, bar)
