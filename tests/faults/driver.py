"""Runs one service call against the fault tests' own database, in a process of its own.

`python -m tests.faults.driver COMMAND [ARGS]` with DATABASE_URL / CELERY_BROKER_URL / GAGAR_VAR_DIR
set by the test; the last line printed is JSON. The test process itself stays on pytest-django's
database, so nothing it holds open can keep a restarted server's clients alive.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any


def _setup() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "gagar_site.settings")
    os.environ.setdefault("SECRET_KEY", "fault-tests-only-secret-key")
    import django

    django.setup()


def migrate() -> dict[str, Any]:
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    return {"ok": True}


def seed(count: str) -> dict[str, Any]:
    """`count` copies of the sample group (one per step), each sent to the grader on commit."""
    from django.db import transaction

    from grading.domain.bundle import group_from_object
    from grading.models import Group
    from grading.sample.build import load_committed_group
    from grading.services.demo import sample_load, sample_repo_path
    from grading.services.grader_runs import grader_config_default, grader_runs_request
    from grading.services.imports import groups_import

    sample_load(grade=False)
    records = []
    for n in range(int(count)):
        obj = load_committed_group()
        obj.update(group_id=f"fault-{n}", run="fault-run", step=n)
        obj["task"]["repo_url"] = str(sample_repo_path())
        records.append(group_from_object(obj, source="faults"))
    report = groups_import(records=records)
    assert report.ok, report.problems
    ids = [r.group_id for r in report.results]
    with transaction.atomic():
        runs = grader_runs_request(
            groups=Group.objects.filter(pk__in=ids), config=grader_config_default()
        )
    return {"groups": ids, "runs": [r.pk for r in runs]}


def reap() -> dict[str, Any]:
    from grading.services.grader_runs import grader_runs_reap

    return {"reaped": grader_runs_reap()}


def status() -> dict[str, Any]:
    from django.db.models import Count

    from grading.models import CandidateGrade, GraderEvent, GraderRun

    runs = list(GraderRun.objects.values("pk", "status", "failure_reason", "deliveries"))
    grades = dict(
        CandidateGrade.objects.values("run").annotate(n=Count("pk")).values_list("run", "n")
    )
    duplicate_grades = (
        CandidateGrade.objects.values("run", "attempt").annotate(n=Count("pk")).filter(n__gt=1)
    )
    duplicate_events = (
        GraderEvent.objects.values("run", "seq").annotate(n=Count("pk")).filter(n__gt=1)
    )
    return {
        "runs": runs,
        "grades": {str(k): v for k, v in grades.items()},
        "duplicate_grades": duplicate_grades.count(),
        "duplicate_events": duplicate_events.count(),
    }


def reviewers(count: str) -> dict[str, Any]:
    """Reviewers with known passwords in one campaign over the sample group (overlap = all)."""
    from django.contrib.auth.models import User

    from grading.services.demo import sample_load
    from review.services.campaigns import campaign_create

    sample_load(grade=False)
    users = []
    for n in range(int(count)):
        user = User.objects.create_user(f"load{n}", password=f"pw-load-{n}")
        users.append(user)
    campaign = campaign_create(
        name="Load", created_by=None, reviewers=users, filters={}, overlap=len(users)
    )
    return {
        "campaign": campaign.pk,
        "reviewers": [[u.username, f"pw-load-{n}"] for n, u in enumerate(users)],
    }


def writes() -> dict[str, Any]:
    """Every stored label note and fix request text, for the load test's lost/duplicate check."""
    from review.models import FixRequest, Label

    return {
        "notes": list(Label.objects.values_list("candidate__token", "notes")),
        "fixes": list(FixRequest.objects.values_list("candidate__token", "text")),
        "submitted": list(
            Label.objects.filter(candidate__assignment__status="submitted")
            .values_list("candidate__assignment_id", flat=True)
            .distinct()
        ),
    }


COMMANDS = {
    "migrate": migrate,
    "seed": seed,
    "reap": reap,
    "status": status,
    "reviewers": reviewers,
    "writes": writes,
}


if __name__ == "__main__":
    _setup()
    command, *args = sys.argv[1:]
    print(json.dumps(COMMANDS[command](*args), default=str))
