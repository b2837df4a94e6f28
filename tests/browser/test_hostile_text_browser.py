"""The hostile-text corpus (tests/security/hostile_text.py) in real Chromium: the review page
with every candidate's trajectory (fetched by the page's own script), compare mode, the staff
pages and the admin show no control, bidi or zero-width character raw in the DOM's text, test
output shows no colour sequence, and names mixing alphabets carry their warning. One page load
per page type."""

from __future__ import annotations

from typing import Any

import pytest
from django.urls import reverse

from grading.models import Attempt, Trajectory
from tests.browser.conftest import login, opened, switched
from tests.security.hostile_text import ANSI_TEST_OUTPUT, SHOWN_TEXT_JS, hostile_text_world, raw_in

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def _shown(page: Any, where: str) -> str:
    text = str(page.evaluate(SHOWN_TEXT_JS))
    assert raw_in(text) == [], where
    assert ANSI_TEST_OUTPUT[1:] not in text, where
    return text


def test_hostile_text_reaches_no_page_raw(browser: Any, server_url: str, artifacts: Any) -> None:
    assignment, flag, run = hostile_text_world()
    ctx = browser.new_context(viewport={"width": 1280, "height": 900})
    page = ctx.new_page()
    login(page, server_url, assignment.reviewer.username)
    page.goto(f"{server_url}{reverse('review:page', args=[assignment.pk])}")
    opened(page)
    for tab in page.locator(".rv-tab").all():
        tab.click()
        # Until the candidate has arrived the current panel is the previous one: its details
        # would be toggled shut instead.
        switched(page)
        panel = page.locator(".rv-panel.is-current")
        panel.locator("details.rv-tests summary").click()
        panel.locator("details.rv-traj summary").click()
        page.wait_for_selector(".rv-panel.is-current .rv-event")
    shown = _shown(page, "review page")
    assert "␛" in shown and "⟨U+202E⟩" in shown and "boom" in shown
    assert "mixes alphabets: l\u0430bel_id (Latin + Cyrillic)" in shown
    assert page.locator(".rv-panel.is-current .d-mixed").count() >= 1
    page.screenshot(path=str(artifacts / "hostile-text-review.png"))
    page.goto(f"{server_url}{reverse('review:compare', args=[assignment.pk])}")
    assert "this file name mixes alphabets" in _shown(page, "compare")

    ctx.clear_cookies()
    login(page, server_url, assignment.campaign.created_by.username)
    attempt = Attempt.objects.filter(group=assignment.group).order_by("index").first()
    assert attempt is not None
    trajectory = Trajectory.objects.get(attempt=attempt)
    urls = [
        reverse("review:staff-detail", args=[assignment.campaign_id]),
        reverse("review:adjudication-detail", args=[flag.pk]),
        reverse("admin:grading_task_change", args=[assignment.group.task_id]),
        reverse("admin:grading_attempt_changelist"),
        reverse("admin:grading_attempt_change", args=[attempt.pk]),
        reverse("admin:grading_trajectory_change", args=[trajectory.pk]),
        reverse("admin:grading_graderrun_change", args=[run.pk]),
        reverse("admin:review_fixrequest_changelist"),
    ]
    for url in urls:
        response = page.goto(server_url + url)
        assert response is not None and response.status == 200, url
        _shown(page, url)
    ctx.close()
