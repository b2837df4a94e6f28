"""The review flow's ends in real Chromium (issue 17): problems at Submit appear beside the
candidate and field they concern, with the first one focused and no jump to the top; after
Submit the page says what was recorded and offers "Next group" and "Back to queue"; after the
reveal the reviewer's own label sits beside the grader's verdict."""

from __future__ import annotations

import pytest

from grading.models import Group
from grading.services.demo import sample_load
from review.models import Assignment, Campaign
from review.services.campaigns import campaign_create
from review.services.queue import assignment_next
from tests.browser.conftest import login, opened
from tests.factories import UserFactory
from tests.review.blind import grader_verdict_for
from tests.review.helpers import complete_labels

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def open_review():
    sample_load()
    group = Group.objects.get(external_id="sample-humanize-lite-1024")
    grader_verdict_for(group)
    alice = UserFactory.create(username="alice")
    campaign = campaign_create(
        name="Flow",
        created_by=None,
        reviewers=[alice],
        filters={},
        overlap=1,
        reveal_policy=Campaign.Reveal.AFTER_SUBMISSION,
    )
    return assignment_next(campaign=campaign, reviewer=alice)


def test_problems_in_place_then_a_clear_end(browser, server_url, artifacts, open_review):
    assignment = open_review
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    login(page, server_url, "alice")
    page.goto(f"{server_url}/review/a/{assignment.pk}/")
    opened(page)
    # Candidate A gets a tier only; nothing else is labelled.
    page.keyboard.press("1")
    page.wait_for_function(
        "() => document.querySelector('.rv-panel.is-current .rv-save-status')"
        ".textContent.startsWith('Saved')"
    )
    page.mouse.wheel(0, 400)
    page.click("#rv-submit button")
    page.wait_for_selector(".rv-field-error")
    where = page.evaluate(
        """() => {
          const el = document.activeElement;
          const panel = el.closest('.rv-panel');
          return {
            inForm: !!el.closest('form.rv-label'),
            panel: panel && panel.dataset.alias,
            current: document.querySelector('.rv-panel.is-current').dataset.alias,
            errorsHere: panel ? panel.querySelectorAll('.rv-field-error').length : 0,
            markedTabs: document.querySelectorAll('.rv-tab.has-problem').length,
            listShown: !document.getElementById('rv-problems').hidden,
            scrollY: window.scrollY,
          };
        }"""
    )
    assert where["inForm"] and where["panel"] == where["current"] == "A", where
    assert where["errorsHere"] >= 1
    assert where["markedTabs"] == assignment.candidates.count()  # every candidate lacks something
    assert not where["listShown"]  # nothing went to the list at the top
    assert where["scrollY"] > 0  # the page did not jump to the top
    error_text = page.locator(".rv-panel.is-current .rv-field-error").first.inner_text()
    assert error_text.startswith("A: ")
    page.screenshot(path=str(artifacts / "review-errors-in-place-1280.png"))
    page.set_viewport_size({"width": 1920, "height": 1000})
    page.screenshot(path=str(artifacts / "review-errors-in-place-1920.png"))

    complete_labels(assignment, "t2", score=3)
    page.reload()
    opened(page)
    page.click("#rv-submit button")
    page.wait_for_selector("#rv-done")
    page.wait_for_load_state("load")
    done = page.locator("#rv-done").inner_text()
    assert "Review submitted" in done and "active time" in done
    assert "T2: " in done
    assert page.locator("#rv-back-to-queue").is_visible()
    top = page.evaluate("document.getElementById('rv-done').getBoundingClientRect().top")
    assert 0 <= top < 900  # on screen when the page arrives
    assert Assignment.objects.get(pk=assignment.pk).status == Assignment.Status.SUBMITTED
    # After the reveal the reviewer's own label is beside the grader's verdict.
    yours = page.locator(".rv-panel.is-current .rv-reveal-yours")
    if yours.count():
        assert "T2" in yours.inner_text()
    page.screenshot(path=str(artifacts / "review-submitted-1920.png"))
    page.set_viewport_size({"width": 1280, "height": 900})
    page.screenshot(path=str(artifacts / "review-submitted-1280.png"))
    page.click("#rv-back-to-queue")
    page.wait_for_url(f"{server_url}/review/")
    assert not errors, errors
    page.close()
