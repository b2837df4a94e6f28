from __future__ import annotations

from io import StringIO

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.test import Client
from django.urls import reverse

from grading.models import CandidateGrade, GraderEvent, GraderRun, Group
from grading.services.grader_runs import (
    grader_config_default,
    grader_run_execute,
    grader_runs_request,
)

pytestmark = pytest.mark.django_db


@pytest.fixture
def staff_client(client: Client) -> Client:
    user = get_user_model().objects.create_superuser("boss", "boss@example.org", "pw")
    client.force_login(user)
    return client


def graded_run(group: Group) -> GraderRun:
    (run,) = grader_runs_request(groups=[group], config=grader_config_default())
    grader_run_execute(run_id=run.pk, worker="test")
    run.refresh_from_db()
    return run


def test_the_run_page_shows_the_transcript_and_the_verdict_escaped(
    sample_group: Group, staff_client: Client
) -> None:
    run = graded_run(sample_group)
    # Tool output is untrusted (repository code, model text).
    GraderEvent.objects.create(
        run=run,
        seq=999,
        kind="tool_call",
        name="read_file",
        arguments={"arguments": {"path": "<img src=x onerror=alert(2)>"}},
        output="<script>alert(1)</script>",
    )
    page = staff_client.get(reverse("admin:grading_graderrun_change", args=[run.pk]))
    html = page.content.decode()
    assert page.status_code == 200
    assert "list_candidates" in html and "submit_ranking" in html and "view_diff" in html
    assert "Evidence" in html and "(post)" in html and "T1 #1" in html
    assert "a1 (" in html  # candidates named by attempt id and alias
    assert "<script>alert(1)</script>" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "<img src=x" not in html


def test_the_run_list_and_the_group_page_show_grading(
    sample_group: Group, staff_client: Client
) -> None:
    graded_run(sample_group)
    listing = staff_client.get(reverse("admin:grading_graderrun_changelist"))
    assert listing.status_code == 200 and "succeeded" in listing.content.decode()
    group_page = staff_client.get(reverse("admin:grading_group_change", args=[sample_group.pk]))
    assert group_page.status_code == 200
    assert "a1 T1" in group_page.content.decode()


def test_grade_again_makes_a_new_replica_of_a_succeeded_run(
    sample_group: Group, staff_client: Client
) -> None:
    run = graded_run(sample_group)
    staff_client.post(
        reverse("admin:grading_graderrun_changelist"),
        {"action": "grade_again", "_selected_action": [run.pk]},
    )
    assert list(GraderRun.objects.order_by("replica").values_list("replica", "status")) == [
        (0, "succeeded"),
        (1, "pending"),
    ]


def test_the_grade_command_grades_inline(sample_group: Group) -> None:
    out = StringIO()
    call_command("grade", "--group", str(sample_group.pk), "--inline", stdout=out)
    assert "succeeded" in out.getvalue()
    assert CandidateGrade.objects.filter(run__group=sample_group).count() == 8
    out = StringIO()
    call_command("grade", "--all", "--again", "--inline", stdout=out)
    assert GraderRun.objects.filter(group=sample_group, status="succeeded").count() == 2
