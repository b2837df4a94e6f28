"""`manage.py import bundle|swebench|reviews …` — import rollouts or reviews, with a summary."""

from __future__ import annotations

from argparse import ArgumentParser
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError
from tqdm import tqdm

from grading.domain.input_paths import file_problem
from grading.domain.jsonfiles import LENIENT_FLAG
from grading.domain.records import ImportProblemError
from grading.domain.run_folders import read_run_folders
from grading.domain.swebench import SystemSource
from grading.services.imports import ImportFailedError, ImportReport, groups_import
from grading.services.sources import bundle_records, swebench_records


def _swebench_arguments(swe: ArgumentParser) -> None:
    swe.add_argument("--tasks", type=Path, required=True, help="JSONL or JSON array")
    swe.add_argument(
        "--run-folder",
        type=Path,
        action="append",
        default=[],
        dest="run_folders",
        metavar="DIR",
        help="one system's folder as the swe-bench experiments repository lays it out "
        "(evaluation/<split>/<system>/: all_preds.jsonl or preds.json, results/results.json, "
        "logs/<id>/, trajs/, metadata.yaml); repeat for several systems",
    )
    swe.add_argument(
        "--predictions",
        type=Path,
        action="append",
        default=[],
        help="one per system (JSONL, a JSON array or preds.json); repeat for several systems",
    )
    swe.add_argument(
        "--report",
        type=Path,
        action="append",
        default=[],
        help="the evaluation report of the predictions at the same position: a run-level "
        "report (results.json, final_report.json, the harness's <model>.<run_id>.json) or a "
        "folder of per-instance <id>/report.json files",
    )
    swe.add_argument("--label", action="append", default=[], help="system name, by position")
    swe.add_argument(
        "--trajectories",
        type=Path,
        action="append",
        default=[],
        help="folder of <instance_id>.traj/.json files, by position",
    )
    swe.add_argument("--run", default="swebench", help="the run's name")
    swe.add_argument("--step", type=int, default=0, help="the training step (default 0)")
    swe.add_argument(
        LENIENT_FLAG,
        action="store_true",
        dest="lenient_json",
        help="repair trailing commas (a known variant of results.json) and say so",
    )


class Command(BaseCommand):
    help = "Import groups of attempts (a gagar.group.v1 bundle, SWE-bench runs) or reviews."

    def add_arguments(self, parser: ArgumentParser) -> None:
        sub = parser.add_subparsers(dest="format", required=True)
        bundle = sub.add_parser("bundle", help="a gagar.group.v1 JSON Lines file")
        bundle.add_argument(
            "path", type=Path, help="the bundle: gagar.group.v1 groups, one JSON object per line"
        )
        swe = sub.add_parser(
            "swebench",
            help="task records + per system: a run folder, or predictions, report, trajectories",
        )
        _swebench_arguments(swe)
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
            p.add_argument(
                "--repos",
                type=Path,
                action="append",
                default=[],
                metavar="DIR",
                help="a folder of local clones or bare mirrors (owner/name, owner__name or "
                "name) where tasks find their source; repeatable, before GAGAR_REPO_MIRRORS",
            )
            p.add_argument(
                "--require-passing",
                action="store_true",
                help="fail (writing nothing) when no attempt passes: nothing would be graded",
            )
            p.add_argument(
                "--no-progress", action="store_true", help="no progress bar on stderr (logs, CI)"
            )
        reviews = sub.add_parser(
            "reviews", help="expert reviews done elsewhere, as an imported campaign"
        )
        from review.management.importing import add_review_arguments

        add_review_arguments(reviews)

    def handle(self, *args: Any, **options: Any) -> None:
        if options["format"] == "reviews":
            from review.management.importing import handle_reviews

            handle_reviews(self, options)
            return
        bundle = options["format"] == "bundle"
        report = self._bundle(options) if bundle else self._swebench(options)
        for problem in report.problems:
            self.stderr.write(f"  {problem}")
        self.stdout.write(report.summary())
        # With --partial, problems fail the command only when no group was imported at all
        # (as the API answers 400): a script must not read "nothing imported" as success.
        refused = report.problems and (not options["partial"] or not report.results)
        if report.rolled_back or refused:
            raise CommandError("import failed; nothing was written")

    def _run(self, records: Any, options: dict[str, Any], bar: tqdm[Any]) -> ImportReport:
        for folder in options["repos"]:
            if not folder.is_dir():
                raise CommandError(f"--repos {folder}: no such folder")
        try:
            return groups_import(
                records=records,
                partial=options["partial"],
                replace=options["replace"],
                require_passing=options["require_passing"],
                repo_folders=options["repos"],
            )
        except ImportFailedError as exc:
            return exc.report
        finally:
            bar.close()

    def _bundle(self, options: dict[str, Any]) -> ImportReport:
        path: Path = options["path"]
        problem = file_problem(path)
        if problem:
            raise CommandError(problem)
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

    def _systems(self, options: dict[str, Any]) -> tuple[list[SystemSource], list[Any]]:
        predictions: list[Path] = options["predictions"]
        if not predictions and not options["run_folders"]:
            raise CommandError("give --run-folder or --predictions (one per system)")
        for name in ("report", "label", "trajectories"):
            if options[name] and len(options[name]) != len(predictions):
                raise CommandError(f"give one --{name} per --predictions (or none)")
        for path in [options["tasks"], *predictions, *options["report"]]:
            if not path.exists():
                raise CommandError(f"{path}: no such file or folder")
        try:
            folders = read_run_folders(options["run_folders"])
        except ImportProblemError as exc:
            raise CommandError(f"{exc.problem}; nothing was written") from exc
        systems = [
            SystemSource(
                predictions=f.predictions,
                report=f.report,
                label=f.label,
                trajectories=f.trajectories,
                logs=f.logs,
            )
            for f in folders
        ]
        systems += [
            SystemSource(
                predictions=p,
                report=options["report"][i] if options["report"] else None,
                label=options["label"][i] if options["label"] else None,
                trajectories=options["trajectories"][i] if options["trajectories"] else None,
            )
            for i, p in enumerate(predictions)
        ]
        return systems, [n for f in folders for n in f.notes]

    def _swebench(self, options: dict[str, Any]) -> ImportReport:
        systems, notes = self._systems(options)
        bar = tqdm(unit="group", desc="import", disable=options["no_progress"], file=self.stderr)
        records = swebench_records(
            tasks_path=options["tasks"],
            systems=systems,
            run=options["run"],
            step=options["step"],
            lenient=options["lenient_json"],
            notes=notes,
        )

        def stream() -> Any:
            for item in records:
                bar.update(1)
                yield item

        return self._run(stream(), options, bar)
