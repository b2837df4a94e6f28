"""Flag for adjudication (issue 17): a reason is required, a second flag of the same verdict is
refused instead of silently replacing the first, and the page shows the flag in place of the
empty form."""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError
from django.urls import reverse

from review.models import Campaign, Disagreement
from review.services.campaigns import campaign_create
from review.services.queue import assignment_next
from review.services.reviewing import disagreement_flag, review_submit
from tests.review.blind import grader_verdict_for
from tests.review.helpers import complete_labels

pytestmark = pytest.mark.django_db


@pytest.fixture
def revealed(sample_group, reviewer, staff):
    run = grader_verdict_for(sample_group)
    campaign = campaign_create(
        name="Reveal",
        created_by=staff,
        reviewers=[reviewer],
        filters={},
        overlap=1,
        reveal_policy=Campaign.Reveal.AFTER_SUBMISSION,
    )
    assignment = assignment_next(campaign=campaign, reviewer=reviewer)
    complete_labels(assignment, "t2", score=3)
    review_submit(assignment=assignment)
    assignment.refresh_from_db()
    graded = {g.attempt_id for g in run.grades.all()}
    candidate = next(c for c in assignment.candidates.all() if c.attempt_id in graded)
    return assignment, candidate


def test_an_empty_reason_is_refused(revealed):
    _, candidate = revealed
    with pytest.raises(ValidationError, match="Say why"):
        disagreement_flag(candidate=candidate, note="   \n")
    assert not Disagreement.objects.exists()


def test_a_second_flag_does_not_replace_the_first(revealed):
    _, candidate = revealed
    disagreement_flag(candidate=candidate, note="first reason")
    with pytest.raises(ValidationError, match="already flagged"):
        disagreement_flag(candidate=candidate, note="second reason")
    assert list(Disagreement.objects.values_list("note", flat=True)) == ["first reason"]


def test_the_page_shows_the_flag_instead_of_an_empty_form(client, revealed, reviewer):
    assignment, candidate = revealed
    client.force_login(reviewer)
    url = reverse("review:disagree", args=[assignment.pk, candidate.token])
    empty = client.post(url, {"note": ""}, follow=True)
    assert "Say why you disagree" in empty.content.decode()
    assert not Disagreement.objects.exists()
    page_url = reverse("review:page", args=[assignment.pk])
    forms_before = client.get(page_url).content.decode().count('class="rv-flag-form"')
    assert client.post(url, {"note": "the grader missed the debug print"}).status_code == 302
    page = client.get(page_url).content.decode()
    assert "Flagged for adjudication" in page
    assert "the grader missed the debug print" in page
    # The flagged candidate's form is gone; the other graded candidates keep theirs.
    assert page.count('class="rv-flag-form"') == forms_before - 1
    again = client.post(url, {"note": "changed my mind"}, follow=True)
    assert "already flagged" in again.content.decode()
    assert Disagreement.objects.get().note == "the grader missed the debug print"


def test_a_flag_asked_for_in_json_answers_json(client, revealed, reviewer):
    assignment, candidate = revealed
    client.force_login(reviewer)
    url = reverse("review:disagree", args=[assignment.pk, candidate.token])
    json_accept = {"HTTP_ACCEPT": "application/json"}
    response = client.post(url, {"note": "too generous"}, **json_accept)
    assert response.status_code == 200
    assert response.json() == {"ok": True, "candidate": candidate.alias, "status": "open"}
    assert Disagreement.objects.get().note == "too generous"
    again = client.post(url, {"note": "again"}, **json_accept)
    assert again.status_code == 400 and "already flagged" in again.json()["problems"][0]
