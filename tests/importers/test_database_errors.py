"""A write the database refuses although every check let it through (a column narrower than the
format allows, a constraint the checks do not know, a concurrent import): that group's problem
is reported with file, line and field and without SQL, nothing of it is written, and with
`--partial` (or `partial=true`) the other groups are imported — through the import command,
`/api/v1/bundles` and `/api/v1/training/groups`.

The refusals are the database's own: the test narrows a column (`num_turns` to smallint, as a
schema drift would) and adds a check constraint on one task id, in the test's transaction.
"""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import connection
from rest_framework.test import APIClient

from grading.models import Attempt, Group, Task, Trajectory
from grading.services.tokens import api_token_create
from tests.factories import ServiceAccountFactory
from tests.importers.helpers import attempt, group, jsonl

pytestmark = [pytest.mark.postgres, pytest.mark.django_db]
SQL_WORDS = ("INSERT", "SELECT", "VALUES", "UPDATE", "Failing row", "CONTEXT", "DETAIL")


@pytest.fixture
def strict_database() -> None:
    with connection.cursor() as cursor:
        cursor.execute("ALTER TABLE grading_attempt ALTER COLUMN num_turns TYPE smallint")
        cursor.execute(
            "ALTER TABLE grading_task ADD CONSTRAINT test_no_doomed_task "
            "CHECK (external_id <> 'doomed')"
        )


def bundle() -> bytes:
    """Line 1 imports; line 2's second attempt has 40000 turns (over smallint); line 3's task
    breaks the constraint; line 4 imports."""
    return jsonl(
        group("t-good-1", run="r"),
        group(
            "t-turns",
            run="r",
            attempts=[attempt("a1"), attempt("a2", test_reward=0.0, num_turns=40000, patch=None)],
        ),
        group("doomed", run="r"),
        group("t-good-2", run="r"),
    )


def assert_the_two_problems(problems: list[dict[str, Any]], source: str) -> None:
    by_line = {p["line"]: p for p in problems}
    assert sorted(by_line) == [2, 3], problems
    turns, doomed = by_line[2], by_line[3]
    assert turns["field"] == "$.attempts[1]"
    assert turns["message"].startswith('attempt "a2": the database refused a value: ')
    assert "smallint out of range" in turns["message"]
    assert doomed["field"] == "$.task"
    assert "the database reports a conflict" in doomed["message"]
    assert "test_no_doomed_task" in doomed["message"]
    for p in problems:
        assert p.get("source", source) == source
        assert "nothing of this group was written" in p["message"]
        assert not any(word in p["message"] for word in SQL_WORDS), p


def assert_only_the_good_groups() -> None:
    assert sorted(Group.objects.values_list("task__external_id", flat=True)) == [
        "t-good-1",
        "t-good-2",
    ]
    assert not Task.objects.filter(external_id__in=["t-turns", "doomed"]).exists()
    assert Attempt.objects.count() == Trajectory.objects.count() == 4


def test_the_import_command_reports_each_refused_group_and_imports_the_rest(
    strict_database: None, tmp_path: Path
) -> None:
    path = tmp_path / "step.jsonl"
    path.write_bytes(bundle())
    out, err = io.StringIO(), io.StringIO()
    call_command(
        "import", "bundle", str(path), "--partial", "--no-progress", stdout=out, stderr=err
    )
    said = err.getvalue()
    assert f'{path}:2: $.attempts[1]: attempt "a2": the database refused a value' in said
    assert f"{path}:3: $.task: the database reports a conflict" in said
    assert not any(word in said + out.getvalue() for word in SQL_WORDS), said
    assert "2 groups created" in out.getvalue() and "2 groups skipped" in out.getvalue()
    assert_only_the_good_groups()


def test_without_partial_the_command_writes_nothing_and_fails(
    strict_database: None, tmp_path: Path
) -> None:
    path = tmp_path / "step.jsonl"
    path.write_bytes(bundle())
    err = io.StringIO()
    with pytest.raises(CommandError, match="nothing was written"):
        call_command(
            "import", "bundle", str(path), "--no-progress", stdout=io.StringIO(), stderr=err
        )
    # The first refusal stops the writing; it is named with its line and field.
    assert f'{path}:2: $.attempts[1]: attempt "a2"' in err.getvalue()
    assert Group.objects.count() == Task.objects.count() == Attempt.objects.count() == 0


@pytest.fixture
def api() -> APIClient:
    user = ServiceAccountFactory.create()
    _, secret = api_token_create(user=user, name="loop")
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {secret}")
    return client


@pytest.mark.parametrize("url", ["/api/v1/bundles", "/api/v1/training/groups"])
def test_the_api_reports_each_refused_group_and_imports_the_rest(
    strict_database: None, api: APIClient, url: str, settings: Any
) -> None:
    settings.GAGAR_SANDBOX = "none"
    response = api.post(f"{url}?partial=true", bundle(), content_type="application/x-ndjson")
    assert response.status_code == 201, response.content[:500]
    body = response.json()
    assert len(body["groups"]) == 2
    assert_the_two_problems(body["problems"], "request")
    assert not any(word in response.content.decode() for word in SQL_WORDS)
    assert_only_the_good_groups()


@pytest.mark.parametrize("url", ["/api/v1/bundles", "/api/v1/training/groups"])
def test_the_api_answers_a_refused_group_with_problem_details(
    strict_database: None, api: APIClient, url: str
) -> None:
    body = jsonl(group("doomed", run="r"))
    response = api.post(url, body, content_type="application/x-ndjson")
    assert response.status_code == 400
    assert response["Content-Type"].startswith("application/problem+json")
    problem = response.json()
    assert problem["status"] == 400 and problem["title"] == "Invalid bundle"
    assert problem["type"].endswith("invalid-bundle")
    ((one),) = problem["problems"]
    assert (one["line"], one["field"]) == (1, "$.task")
    assert "test_no_doomed_task" in one["message"]
    assert not any(word in json.dumps(problem) for word in SQL_WORDS)
    assert Group.objects.count() == Task.objects.count() == 0
