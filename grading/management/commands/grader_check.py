from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from grading.models import GraderConfig
from grading.services.grader_check import grader_config_check
from grading.services.grader_runs import grader_config_for


class Command(BaseCommand):
    help = "Try a grader configuration's endpoint on a tiny task and say what works."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--config", help="grader configuration name (default: from env)")

    def handle(self, *args: Any, **opts: Any) -> None:
        try:
            config = grader_config_for(name=opts["config"])
        except GraderConfig.DoesNotExist as exc:
            raise CommandError(f"no grader configuration named {opts['config']!r}") from exc
        report = grader_config_check(config=config)
        self.stdout.write(f"grader check of {report.config}:")
        for line in report.lines:
            self.stdout.write(f"  {line}")
        if not report.ok:
            raise CommandError("the endpoint is not ready for grading (see above)")
        self.stdout.write("ready for grading")
