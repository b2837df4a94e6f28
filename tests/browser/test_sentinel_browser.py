"""A sentinel in real Chromium (issue 17): the group a reviewer already submitted comes back
from the queue's "Start the next group" and is reviewed like any group — keyboard tiers,
pre-filled rubric, autosave, Submit and its end — under new letters, with nothing on the page
saying it was seen before."""

from __future__ import annotations

import pytest

from grading.models import Group
from grading.services.demo import sample_load
from review.models import Assignment, Label
from review.services.campaigns import campaign_create
from review.services.queue import assignment_next
from review.services.reviewing import review_submit
from tests.browser.conftest import login, opened, switched
from tests.factories import UserFactory
from tests.review.helpers import complete_labels, make_groups

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
SAVED = (
    "() => document.querySelector('.rv-panel.is-current .rv-save-status')"
    ".textContent.startsWith('Saved')"
)


@pytest.fixture
def first_review() -> Assignment:
    """Alice has submitted the sample group, then one more: the sample group is owed back."""
    sample_load()
    sample = Group.objects.get(external_id="sample-humanize-lite-1024")
    make_groups(1)
    alice = UserFactory.create(username="alice")
    campaign = campaign_create(
        name="Study", created_by=None, reviewers=[alice], filters={}, overlap=1, sentinel_rate=0.5
    )
    done = []
    for _ in range(2):
        assignment = assignment_next(campaign=campaign, reviewer=alice)
        complete_labels(assignment, "t3")
        done.append(review_submit(assignment=assignment))
    assert done[0].group_id == sample.pk
    return done[0]


def test_a_sentinel_is_reviewed_like_any_group(browser, server_url, artifacts, first_review):
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    login(page, server_url, "alice")
    page.goto(f"{server_url}/review/")
    assert "1 group available to you" in page.inner_text("main")
    page.click("text=Start the next group")
    opened(page)
    sentinel = Assignment.objects.get(sentinel=True)
    assert page.url.endswith(f"/review/a/{sentinel.pk}/")
    assert sentinel.group_id == first_review.group_id
    # Nothing of the first review: no label chosen, nothing marked viewed, and no word of it.
    assert page.locator("input[name=tier]").count() > 0
    assert page.locator("input[name=tier]:checked").count() == 0
    assert "sentinel" not in page.content().lower()
    page.screenshot(path=str(artifacts / "review-sentinel-1280.png"))
    n = sentinel.candidates.count()
    for i in range(n):
        if i:
            page.keyboard.press("]")
            # The mergeability select is the shown candidate's: until the next one has arrived
            # it is still the previous candidate's form (the keyboard's "2" waits by itself).
            switched(page)
        page.keyboard.press("2")
        page.select_option(".rv-panel.is-current select[name=mergeability]", "as_is")
        page.wait_for_function(SAVED)
    page.click("#rv-submit button")
    page.wait_for_selector("#rv-done")
    assert Assignment.objects.get(pk=sentinel.pk).status == Assignment.Status.SUBMITTED
    labels = Label.objects.filter(candidate__assignment=sentinel)
    assert labels.count() == n and {lab.tier for lab in labels} == {"t2"}
    # The first review is untouched, and every candidate came back under another letter.
    assert set(
        Label.objects.filter(candidate__assignment=first_review).values_list("tier", flat=True)
    ) == {"t3"}
    before = dict(first_review.candidates.values_list("attempt_id", "alias"))
    after = dict(sentinel.candidates.values_list("attempt_id", "alias"))
    assert all(after[a] != before[a] for a in after)
    page.goto(f"{server_url}/review/")
    assert "Nothing left for you here" in page.inner_text("main")
    page.close()
