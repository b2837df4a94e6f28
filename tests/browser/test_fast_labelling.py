"""Faster labelling (issue 17): a tier pre-fills the rubric with that tier's typical scores,
marked and stored as pre-filled until the reviewer sets or confirms them. The inputs a
candidate needs (a click, a key press or a changed field each) are counted and printed;
target ≤ 4 for a candidate that needs no fix request."""

from __future__ import annotations

import pytest

from grading.services.demo import sample_load
from review.models import Assignment, Label
from review.models.reviewing import CRITERIA
from review.services.campaigns import campaign_create
from review.services.queue import assignment_next
from tests.browser.conftest import login, opened, switched
from tests.factories import UserFactory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
SAVED = (
    "() => document.querySelector('.rv-panel.is-current .rv-save-status')"
    ".textContent.startsWith('Saved')"
)


@pytest.fixture
def assignment():
    sample_load()
    alice = UserFactory.create(username="alice")
    campaign = campaign_create(
        name="Fast", created_by=None, reviewers=[alice], filters={}, overlap=1
    )
    campaign.rubric_required = True
    campaign.save()
    return assignment_next(campaign=campaign, reviewer=alice)


def test_a_candidate_takes_three_inputs_with_the_rubric_required(
    browser, server_url, artifacts, assignment
):
    page = browser.new_page(viewport={"width": 1440, "height": 900})
    login(page, server_url, "alice")
    page.goto(f"{server_url}/review/a/{assignment.pk}/")
    opened(page)
    n = assignment.candidates.count()
    per_candidate = []
    for i in range(n):
        inputs = 0
        if i:
            page.keyboard.press("]")  # next candidate
            switched(page)
            inputs += 1
        page.keyboard.press("2")  # tier T2: rank and rubric fill themselves
        inputs += 1
        assert page.locator(".rv-panel.is-current .rv-score.is-prefilled").count() == 5
        page.select_option(".rv-panel.is-current select[name=mergeability]", "as_is")
        inputs += 1
        page.wait_for_function(SAVED)
        per_candidate.append(inputs)
        if i == 0:
            page.screenshot(path=str(artifacts / "review-prefilled-1440.png"))
    print(f"inputs per candidate: {per_candidate} (max {max(per_candidate)})")
    assert max(per_candidate) <= 4
    # The reviewer confirms one pre-filled score by clicking it: it is theirs from then on.
    page.click(
        ".rv-panel.is-current .rv-score[data-criterion=approach_suitability] label:nth-child(4)"
    )
    page.wait_for_function(
        "() => !document.querySelector('.rv-panel.is-current "
        ".rv-score[data-criterion=approach_suitability]').classList.contains('is-prefilled')"
    )
    page.wait_for_function(SAVED)
    page.click("#rv-submit button")
    page.wait_for_selector("#rv-done")
    assert Assignment.objects.get(pk=assignment.pk).status == Assignment.Status.SUBMITTED
    labels = {
        lab.candidate.alias: lab for lab in Label.objects.filter(candidate__assignment=assignment)
    }
    last = max(labels)
    assert labels[last].approach_suitability == 4
    assert "approach_suitability" not in labels[last].prefilled
    others = [lab for alias, lab in labels.items() if alias != last]
    assert all(lab.prefilled == list(CRITERIA) for lab in others)
    assert all(getattr(lab, c) == 4 for lab in others for c in CRITERIA)  # T2's typical score
    page.close()


def test_same_as_another_candidate_copies_its_rubric_in_four_inputs(
    browser, server_url, artifacts, assignment
):
    """A candidate whose rubric matches one already scored: next, tier, "same as", mergeability."""
    page = browser.new_page(viewport={"width": 1440, "height": 900})
    login(page, server_url, "alice")
    page.goto(f"{server_url}/review/a/{assignment.pk}/")
    opened(page)
    current = ".rv-panel.is-current form.rv-label"
    # Candidate A gets a rubric of its own: T2, two scores moved off the typical 4, as is.
    page.keyboard.press("2")
    for criterion, score in (("approach_suitability", 5), ("minimality_of_changes", 3)):
        page.click(f"{current} .rv-score[data-criterion={criterion}] label:nth-child({score})")
    page.select_option(f"{current} select[name=mergeability]", "as_is")
    page.wait_for_function(SAVED)
    first_alias = page.locator(".rv-panel.is-current").get_attribute("data-alias")
    first_token = page.locator(".rv-panel.is-current").get_attribute("data-token")

    inputs = 0
    page.keyboard.press("]")  # next candidate
    inputs += 1
    switched(page)
    page.keyboard.press("2")  # tier: pre-fills the typical rubric
    inputs += 1
    page.select_option(f"{current} select[data-same-as]", first_token)  # same rubric as A
    inputs += 1
    assert page.locator(f"{current} .rv-score.is-prefilled").count() == 3
    page.select_option(f"{current} select[name=mergeability]", "as_is")
    inputs += 1
    page.wait_for_function(SAVED)
    page.screenshot(path=str(artifacts / "review-same-as-1440.png"))
    print(f"inputs for a candidate scored 'same as candidate {first_alias}': {inputs}")
    assert inputs <= 4
    # Back on A, the form shows A's own label again (one form, refilled per candidate).
    page.keyboard.press("[")
    switched(page)
    assert (
        page.locator(f"{current} input[name=approach_suitability]:checked").get_attribute("value")
        == "5"
    )

    second = page.locator(".rv-tab").nth(1).get_attribute("data-token")
    label = Label.objects.get(candidate__token=second)
    assert (label.approach_suitability, label.minimality_of_changes) == (5, 3)
    assert label.implementation_precision == 4
    # The two scores set on A count as set here; the three A left pre-filled stay pre-filled.
    assert set(label.prefilled) == set(CRITERIA) - {"approach_suitability", "minimality_of_changes"}
    page.close()
