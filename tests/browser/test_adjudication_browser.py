"""Staff adjudicate a reviewer's disagreement flag in real Chromium: the hostile note stays
inert, the decision is recorded, and the queue moves on."""

from __future__ import annotations

import pytest

from grading.models import Group
from grading.services.demo import sample_load
from review.models import Campaign, Disagreement
from review.services.campaigns import campaign_create
from review.services.queue import assignment_next
from review.services.reviewing import disagreement_flag, review_submit
from tests.browser.conftest import login
from tests.factories import StaffFactory, UserFactory
from tests.review.blind import grader_verdict_for
from tests.review.helpers import complete_labels

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
NOTE = "<img src=x onerror=\"document.title='pwned'\"> The grader missed the debug print."


@pytest.fixture
def flag() -> Disagreement:
    sample_load()
    group = Group.objects.get(external_id="sample-humanize-lite-1024")
    run = grader_verdict_for(group)
    alice = UserFactory.create(username="alice")
    StaffFactory.create(username="lead")
    campaign = campaign_create(
        name="Adjudication campaign",
        created_by=None,
        reviewers=[alice],
        filters={},
        overlap=1,
        reveal_policy=Campaign.Reveal.AFTER_SUBMISSION,
    )
    assignment = assignment_next(campaign=campaign, reviewer=alice)
    complete_labels(assignment, "t2", score=3)
    review_submit(assignment=assignment)
    graded = {g.attempt_id for g in run.grades.all()}
    candidate = next(c for c in assignment.candidates.all() if c.attempt_id in graded)
    candidate.assignment.refresh_from_db()
    return disagreement_flag(candidate=candidate, grader_run=run, note=NOTE)


def test_staff_resolve_a_flag_in_the_browser(browser, server_url, artifacts, flag):
    page = browser.new_page(viewport={"width": 1440, "height": 1000})
    dialogs: list[str] = []

    def on_dialog(dialog) -> None:
        dialogs.append(dialog.message)
        dialog.dismiss()

    page.on("dialog", on_dialog)
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    login(page, server_url, "lead")
    page.click("nav >> text=Adjudication")
    page.wait_for_selector("table.rv-table")
    assert page.locator("tbody tr").count() == 1
    page.click(f"text=#{flag.pk}")
    page.wait_for_selector("form.rv-adjudicate-form")
    assert "The grader missed the debug print." in page.inner_text("body")
    assert page.locator("img[src=x]").count() == 0 and page.title() != "pwned"
    page.screenshot(path=str(artifacts / "adjudication-case.png"), full_page=False)

    page.check("input[name=resolution][value=reviewer_right]")
    page.select_option("select[name=adjudicated_tier]", "t3")
    page.fill("textarea[name=note]", "Agreed: a leftover print is not a T1 change.")
    page.click("form.rv-adjudicate-form button[type=submit]")
    page.wait_for_selector("text=No flags here.")
    page.screenshot(path=str(artifacts / "adjudication-done.png"))

    flag.refresh_from_db()
    assert (flag.status, flag.resolution, flag.adjudicated_tier) == (
        "resolved",
        "reviewer_right",
        "t3",
    )
    assert flag.resolved_by.username == "lead"
    assert dialogs == [] and errors == []
