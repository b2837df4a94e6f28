from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandParser

from grading.services.demo import (
    demo_accounts_ensure,
    demo_accounts_path,
    sample_grade,
    sample_load,
)
from review.services.demo import (
    DEMO_CAMPAIGN,
    STUDY_CAMPAIGN,
    demo_campaign_ensure,
    study_build,
    study_remove,
)

# The command prints its own summary of what these services log line by line.
QUIET_LOGGERS = ("gagar.import", "grading.services.grader_runs")


@contextmanager
def _quiet() -> Iterator[None]:
    loggers = [logging.getLogger(name) for name in QUIET_LOGGERS]
    levels = [logger.level for logger in loggers]
    for logger in loggers:
        logger.setLevel(logging.WARNING)
    try:
        yield
    finally:
        for logger, level in zip(loggers, levels, strict=True):
            logger.setLevel(level)


class Command(BaseCommand):
    help = (
        "Load the project's sample group, grade it, create the demo accounts and a campaign "
        "open to the demo reviewers (idempotent); --study adds a synthetic multi-group study."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--study",
            action="store_true",
            help="also add the synthetic study (groups, reviews, grader runs, advantages); "
            "a no-op when present",
        )
        parser.add_argument(
            "--remove-study", action="store_true", help="delete the synthetic study and stop"
        )

    def handle(self, *args: Any, **options: Any) -> None:
        with _quiet():
            self._handle(options)

    def _handle(self, options: dict[str, Any]) -> None:
        if options["remove_study"]:
            removed = study_remove()
            self.stdout.write("Synthetic study removed." if removed else "No synthetic study.")
            return
        started = time.monotonic()
        report = sample_load(grade=False)
        self.stdout.write(f"Sample data: {report.summary()}")
        self.stdout.write(f"Sample group: {sample_grade().summary()}")
        accounts = demo_accounts_ensure()
        users = get_user_model().objects.in_bulk(
            [a.username for a in accounts], field_name="username"
        )
        reviewers = [users[a.username] for a in accounts if not a.is_staff]
        admin = next((users[a.username] for a in accounts if a.is_staff), None)
        demo_campaign_ensure(reviewers=reviewers, created_by=admin)
        self.stdout.write(
            f"Campaign “{DEMO_CAMPAIGN}” is open to {', '.join(u.username for u in reviewers)}."
        )
        if options["study"]:
            study = study_build(also_reviewers=reviewers)
            self.stdout.write(f"{study.summary()} (campaign “{STUDY_CAMPAIGN}”)")
        self.stdout.write(f"Accounts (kept in {demo_accounts_path()}):")
        for account in accounts:
            role = "staff/admin" if account.is_staff else "reviewer"
            self.stdout.write(f"  {account.username:<10} {account.password:<14} {role}")
        if not options["study"]:
            self.stdout.write(
                "For every dashboard chart with data: "
                "DEBUG=1 .venv/bin/python manage.py demo --study "
                "(adds a synthetic study, labelled as such)"
            )
        self.stdout.write(f"Done in {time.monotonic() - started:.1f} s.")
