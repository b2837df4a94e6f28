"""Rough edges a first-time user hit (issue 17): the schema downloads instead of showing, bare
403 pages, no favicon, raw Markdown, the admin's Django branding, imported rollouts editable in
the admin, and a green check for "exploit suspected"."""

from __future__ import annotations

import pytest
from django.urls import reverse

from grading.models import Attempt, CandidateGrade, Group, Run
from review.services.queue import assignment_next
from tests.review.blind import grader_verdict_for

pytestmark = pytest.mark.django_db
BROWSER = {"HTTP_ACCEPT": "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"}


def test_the_schema_is_shown_in_a_browser_and_unchanged_for_clients(client):
    page = client.get("/api/v1/schema", **BROWSER)
    assert page.status_code == 200
    assert page["Content-Type"].startswith("text/plain")
    assert "attachment" not in page.get("Content-Disposition", "")
    assert page.content.decode().startswith("openapi:")
    as_json = client.get("/api/v1/schema?format=json", **BROWSER)
    assert as_json["Content-Type"].startswith("application/vnd.oai.openapi+json")
    assert client.get("/api/v1/schema")["Content-Type"].startswith("application/vnd.oai.openapi")


def test_a_reviewer_on_a_staff_page_gets_a_page_that_says_where_to_go(client, reviewer):
    client.force_login(reviewer)
    response = client.get(reverse("review:staff-list"))
    assert response.status_code == 403
    body = response.content.decode()
    assert "This page is for staff" in body
    assert reverse("review:queue") in body


def test_the_favicon_exists(client):
    response = client.get("/favicon.ico")
    assert response.status_code == 301
    assert response["Location"].endswith("favicon.svg")


def test_the_problem_statement_is_rendered_markdown_with_html_escaped(client, campaign, reviewer):
    group = Group.objects.get(external_id="sample-humanize-lite-1024")
    group.task.problem_statement = (
        "`naturalsize(0)` is **wrong**.\n\n<script>alert(1)</script>\n\n"
        "[docs](javascript:alert(2)) ![x](https://tracker.example/pixel.png)"
    )
    group.task.save()
    assignment = assignment_next(campaign=campaign, reviewer=reviewer)
    client.force_login(reviewer)
    body = client.get(reverse("review:page", args=[assignment.pk])).content.decode()
    assert "<code>naturalsize(0)</code> is <strong>wrong</strong>" in body
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in body
    assert 'href="javascript:' not in body
    assert '<img src="https://tracker.example' not in body


def test_the_admin_is_branded_and_imported_rollouts_are_read_only(admin_client, sample_group):
    index = admin_client.get(reverse("admin:index")).content.decode()
    assert "GAGAR Review administration" in index
    assert "Django administration" not in index
    attempt = Attempt.objects.filter(group=sample_group).first()
    run = Run.objects.first()
    for url in (
        reverse("admin:grading_attempt_delete", args=[attempt.pk]),
        reverse("admin:grading_run_delete", args=[run.pk]),
        reverse("admin:grading_group_delete", args=[sample_group.pk]),
        reverse("admin:grading_run_add"),
    ):
        assert admin_client.get(url).status_code == 403, url
    before = run.name
    admin_client.post(reverse("admin:grading_run_change", args=[run.pk]), {"name": "edited"})
    run.refresh_from_db()
    assert run.name == before
    group_page = admin_client.get(reverse("admin:grading_group_change", args=[sample_group.pk]))
    assert 'name="_save"' not in group_page.content.decode()


def test_exploit_suspected_is_not_shown_as_a_green_check(admin_client, sample_group):
    run = grader_verdict_for(sample_group)
    CandidateGrade.objects.filter(run=run).update(exploit_suspected=True)
    page = admin_client.get(reverse("admin:grading_graderrun_change", args=[run.pk]))
    html = page.content.decode()
    assert "⚠ suspected" in html
    assert "icon-yes" not in html
