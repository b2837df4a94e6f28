"""Fix requests and viewed marks point at what the reviewer was shown: a file of the
candidate's diff, a side it has and a line that exists on that side (issue 17)."""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError
from django.urls import reverse

from review.diffs import parse_patch
from review.services.queue import assignment_next
from review.services.reviewing import fix_request_create

pytestmark = pytest.mark.django_db
JSON = {"HTTP_ACCEPT": "application/json"}


@pytest.fixture
def assignment(campaign, reviewer):
    return assignment_next(campaign=campaign, reviewer=reviewer)


def _files(assignment):
    """(candidate, parsed file) for every file of every candidate of the group."""
    return [
        (c, f)
        for c in assignment.candidates.order_by("position")
        for f in parse_patch(c.attempt.patch.text)
    ]


def _fix(candidate, path: str, line: int, side: str):
    return fix_request_create(
        candidate=candidate, path=path, line=line, side=side, text="t", severity="nit"
    )


def test_a_line_past_the_end_of_the_file_is_refused(assignment):
    candidate, file = next((c, f) for c, f in _files(assignment) if f.change == "modified")
    with pytest.raises(ValidationError, match="no new line 9999"):
        _fix(candidate, file.path, 9999, "new")
    with pytest.raises(ValidationError, match="no old line 9999"):
        _fix(candidate, file.path, 9999, "old")
    assert not candidate.fix_requests.exists()


def test_a_line_that_is_shown_is_accepted_on_either_side(assignment):
    candidate, file = next((c, f) for c, f in _files(assignment) if f.change == "modified")
    added = next(ln for h in file.hunks for ln in h.lines if ln.kind == "+")
    removed_or_context = next(ln for h in file.hunks for ln in h.lines if ln.old_no is not None)
    assert _fix(candidate, file.path, added.new_no, "new").line == added.new_no
    assert _fix(candidate, file.path, removed_or_context.old_no, "old").side == "old"


def test_a_new_file_has_no_old_side_and_no_line_zero(assignment):
    found = [(c, f) for c, f in _files(assignment) if f.change == "added"]
    if not found:
        pytest.skip("the sample group has no candidate adding a file")
    candidate, file = found[0]
    with pytest.raises(ValidationError, match="new file"):
        _fix(candidate, file.path, 1, "old")
    with pytest.raises(ValidationError, match="no new line 0"):
        _fix(candidate, file.path, 0, "new")
    last = max(ln.new_no for h in file.hunks for ln in h.lines if ln.new_no)
    with pytest.raises(ValidationError, match=f"no new line {last + 1}"):
        _fix(candidate, file.path, last + 1, "new")
    assert _fix(candidate, file.path, last, "new").line == last


def test_a_file_outside_the_diff_is_refused(assignment):
    candidate = assignment.candidates.first()
    with pytest.raises(ValidationError, match="not in this candidate's diff"):
        _fix(candidate, "no/such/file.py", 1, "new")


def test_the_endpoint_answers_the_problem_in_place(client, assignment, reviewer):
    candidate, file = next((c, f) for c, f in _files(assignment) if f.change == "modified")
    client.force_login(reviewer)
    url = reverse("review:fix", args=[assignment.pk, candidate.token])
    form = {"path": file.path, "line": 9999, "side": "new", "text": "t", "severity": "nit"}
    response = client.post(url, form, **JSON)
    assert response.status_code == 400
    assert "no new line 9999" in " ".join(response.json()["problems"])
    assert not candidate.fix_requests.exists()
