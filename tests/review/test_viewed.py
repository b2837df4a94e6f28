"""Viewed-file marks: stored per reviewer on the server, validated, locked after submission."""

import json
import re

import pytest
from django.urls import reverse
from django.utils import timezone

from review.diffs import file_id_for
from review.models import Assignment, Candidate
from review.services.queue import assignment_next

pytestmark = pytest.mark.django_db
JSON = {"HTTP_ACCEPT": "application/json"}


@pytest.fixture
def assignment(campaign, reviewer):
    return assignment_next(campaign=campaign, reviewer=reviewer)


def _files(client, assignment: Assignment, candidate: Candidate) -> list[str]:
    """The file ids the page lists for a candidate, in order."""
    page = client.get(reverse("review:page", args=[assignment.pk])).content.decode()
    section = page.split(f'data-token="{candidate.token}" data-alias')[1].split("</section>")[0]
    return re.findall(r'<li data-file-id="([^"]+)">', section)


def _config(client, assignment: Assignment) -> dict:
    page = client.get(reverse("review:page", args=[assignment.pk])).content.decode()
    raw = page.split('<script id="rv-config" type="application/json">')[1].split("</script>")[0]
    return json.loads(raw)


def _tick(client, assignment, candidate, file_id, on=True, **extra):
    url = reverse("review:viewed", args=[assignment.pk, candidate.token])
    return client.post(url, {"file": file_id, "viewed": "1" if on else "0"}, **extra)


def test_a_viewed_mark_survives_a_reload_and_can_be_taken_back(client, reviewer, assignment):
    client.force_login(reviewer)
    candidate = assignment.candidates.first()
    files = _files(client, assignment, candidate)
    assert files, "the sample candidate changes at least one file"
    assert _config(client, assignment)["viewed"][candidate.token] == []

    answer = _tick(client, assignment, candidate, files[0], **JSON).json()
    assert answer == {"ok": True, "viewed": [files[0]]}
    # Ticking twice is the same as once (a retried request, two tabs).
    assert _tick(client, assignment, candidate, files[0], **JSON).json()["viewed"] == [files[0]]
    candidate.refresh_from_db()
    assert [file_id_for(p) for p in candidate.viewed_paths] == [files[0]]
    assert _config(client, assignment)["viewed"][candidate.token] == [files[0]]

    assert _tick(client, assignment, candidate, files[0], on=False, **JSON).json()["viewed"] == []
    candidate.refresh_from_db()
    assert candidate.viewed_paths == []


def test_marks_are_per_candidate_and_per_reviewer(
    client, reviewer, other_reviewer, campaign, assignment
):
    client.force_login(reviewer)
    first, second = assignment.candidates.all()[:2]
    _tick(client, assignment, first, _files(client, assignment, first)[0], **JSON)
    config = _config(client, assignment)
    assert config["viewed"][first.token] and config["viewed"][second.token] == []

    theirs = assignment_next(campaign=campaign, reviewer=other_reviewer)
    client.force_login(other_reviewer)
    assert not any(_config(client, theirs)["viewed"].values())


def test_a_file_outside_the_candidates_diff_is_refused_and_nothing_is_stored(
    client, reviewer, assignment
):
    client.force_login(reviewer)
    candidate = assignment.candidates.first()
    for bad in ["", "f-nope", "../../etc/passwd", "<script>alert(1)</script>"]:
        response = _tick(client, assignment, candidate, bad, **JSON)
        assert response.status_code == 400
        assert response.json()["problems"] == ["That file is not in this candidate's diff."]
    candidate.refresh_from_db()
    assert candidate.viewed_paths == []


def test_marks_cannot_change_after_submission(client, reviewer, assignment):
    client.force_login(reviewer)
    candidate = assignment.candidates.first()
    file_id = _files(client, assignment, candidate)[0]
    Assignment.objects.filter(pk=assignment.pk).update(
        status=Assignment.Status.SUBMITTED, submitted_at=timezone.now()
    )
    response = _tick(client, assignment, candidate, file_id, **JSON)
    assert response.status_code == 400
    assert "can no longer change" in response.json()["problems"][0]
    candidate.refresh_from_db()
    assert candidate.viewed_paths == []
    assert _config(client, assignment)["locked"] is True


def test_without_javascript_the_form_post_redirects_back(client, reviewer, assignment):
    client.force_login(reviewer)
    candidate = assignment.candidates.first()
    response = _tick(client, assignment, candidate, _files(client, assignment, candidate)[0])
    assert response.status_code == 302
    assert response.url.endswith(f"#cand-{candidate.alias}")
