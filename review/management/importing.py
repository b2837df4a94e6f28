"""`manage.py import reviews FILE… --campaign NAME`: the review side of the import command.

The `import` command (grading) hands the `reviews` subcommand to this module, because the
reviews format and its campaign belong to the review app.
"""

from __future__ import annotations

from argparse import ArgumentParser
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from grading.domain.input_paths import file_problem
from review.services.review_imports import ReviewImportFailedError, reviews_import


def add_review_arguments(parser: ArgumentParser) -> None:
    parser.add_argument(
        "files",
        type=Path,
        nargs="+",
        metavar="FILE",
        help="JSON Lines, one line per task; each file is one reviewer",
    )
    parser.add_argument("--campaign", required=True, help="the imported campaign (created if new)")
    parser.add_argument(
        "--reviewer",
        action="append",
        default=[],
        help="the reviewer's pseudonym, one per FILE (default: the file's name, e.g. rater-1)",
    )
    parser.add_argument("--run", help="the run whose groups were reviewed, if tasks have several")
    parser.add_argument("--step", type=int, help="the step, if tasks have several")
    parser.add_argument(
        "--partial",
        action="store_true",
        help="import the valid lines and report the rest (default: all or nothing)",
    )
    parser.add_argument(
        "--replace", action="store_true", help="overwrite a reviewer's different earlier review"
    )


def handle_reviews(command: BaseCommand, options: dict[str, Any]) -> None:
    files: list[Path] = options["files"]
    for path in files:
        refusal = file_problem(path)
        if refusal:
            raise CommandError(refusal)
    if options["reviewer"] and len(options["reviewer"]) != len(files):
        raise CommandError("give one --reviewer per FILE (or none)")
    try:
        report = reviews_import(
            paths=files,
            campaign_name=options["campaign"],
            reviewers=options["reviewer"] or None,
            run=options["run"],
            step=options["step"],
            partial=options["partial"],
            replace=options["replace"],
        )
    except ReviewImportFailedError as exc:
        for problem in exc.report.problems:
            command.stderr.write(f"  {problem}")
        command.stdout.write(exc.report.summary())
        raise CommandError("import failed; nothing was written") from exc
    for problem in report.problems:
        command.stderr.write(f"  {problem}")
    command.stdout.write(report.summary())
