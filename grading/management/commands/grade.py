from __future__ import annotations

import time
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db.models import Exists, OuterRef

from grading.models import Attempt, GraderConfig, GraderRun, Group
from grading.services.grader_runs import (
    grader_config_for,
    grader_run_execute,
    grader_runs_regrade,
    grader_runs_request,
)

UNFINISHED = (GraderRun.Status.PENDING, GraderRun.Status.RUNNING)


class Command(BaseCommand):
    help = "Send groups to the grader (the `grading` queue); optionally wait for the verdicts."

    def add_arguments(self, parser: CommandParser) -> None:
        which = parser.add_mutually_exclusive_group(required=True)
        which.add_argument(
            "--group",
            type=int,
            action="append",
            dest="groups",
            metavar="ID",
            help="a group's database id; repeatable",
        )
        which.add_argument("--all", action="store_true", help="every group")
        parser.add_argument("--config", help="grader configuration name (default: from env)")
        parser.add_argument(
            "--replica",
            type=int,
            default=0,
            help="which independent grading of the same group (0, 1, …) for agreement studies; "
            "default 0",
        )
        parser.add_argument("--again", action="store_true", help="re-grade finished runs")
        parser.add_argument("--wait", action="store_true", help="wait until every run finished")
        parser.add_argument("--timeout", type=float, default=3600.0, help="seconds, with --wait")
        parser.add_argument(
            "--inline",
            action="store_true",
            help="grade in this process instead of a worker (nothing is sent to the broker)",
        )
        parser.add_argument(
            "--allow-empty",
            action="store_true",
            help="succeed even when no requested group has a passing candidate to grade",
        )

    def handle(self, *args: Any, **opts: Any) -> None:
        try:
            config = grader_config_for(name=opts["config"])
        except GraderConfig.DoesNotExist as exc:
            raise CommandError(f"no grader configuration named {opts['config']!r}") from exc
        groups = Group.objects.all() if opts["all"] else Group.objects.filter(pk__in=opts["groups"])
        missing = set(opts["groups"] or []) - set(groups.values_list("pk", flat=True))
        if missing:
            raise CommandError(f"unknown group ids: {sorted(missing)}")
        passing = Attempt.objects.passing().filter(group=OuterRef("pk"))
        gradable = groups.filter(Exists(passing))
        empty = groups.exclude(pk__in=gradable.values("pk")).select_related("task")
        for group in empty[:20]:
            self.stdout.write(f"group {group.pk} ({group.task}): no passing candidate, not graded")
        n_empty = empty.count()
        if n_empty > 20:
            self.stdout.write(f"… and {n_empty - 20} more groups with no passing candidate")
        if not gradable.exists():
            message = (
                f"no candidates: none of the {groups.count()} requested groups has a passing "
                "attempt, so there is nothing to grade"
            )
            if not opts["allow_empty"]:
                raise CommandError(message + " (--allow-empty to accept that)")
            self.stdout.write(message)
            return
        # Inline runs are executed right here: a broker message would be a second delivery.
        enqueue = not opts["inline"]
        runs = grader_runs_request(
            groups=gradable, config=config, replica=opts["replica"], enqueue=enqueue
        )
        if opts["again"]:
            runs = grader_runs_regrade(
                runs=[r for r in runs if r.status not in UNFINISHED], enqueue=enqueue
            )
        self.stdout.write(f"{len(runs)} grader runs with {config.name}")
        if opts["inline"]:
            for run in runs:
                grader_run_execute(run_id=run.pk, worker="manage.py grade --inline")
        elif opts["wait"]:
            self._wait([r.pk for r in runs], opts["timeout"])
        self._report([r.pk for r in runs])

    def _wait(self, ids: list[int], timeout_s: float) -> None:
        deadline = time.monotonic() + timeout_s
        while GraderRun.objects.filter(pk__in=ids, status__in=UNFINISHED).exists():
            if time.monotonic() > deadline:
                raise CommandError("timed out waiting for the grader runs; are workers running?")
            time.sleep(1.0)

    def _report(self, ids: list[int]) -> None:
        runs = GraderRun.objects.filter(pk__in=ids).select_related("config").order_by("pk")
        for run in runs:
            line = f"run {run.pk} group {run.group_id} #{run.replica}: {run.status}"
            if run.status == GraderRun.Status.SUCCEEDED:
                line += f" in {run.latency_s} s, {run.llm_calls} calls"
            elif run.failure_reason:
                line += f" ({run.failure_reason[:200]})"
            self.stdout.write(line)
