"""Access checks and response shaping shared by the review views (staff_required is site-wide:
`gagar_site.access`)."""

from __future__ import annotations

from django.http import Http404, HttpRequest

from review.models import Assignment, Candidate
from review.selectors.reviewing import assignment_for_reviewer, candidate_for_reviewer


def wants_json(request: HttpRequest) -> bool:
    return "application/json" in request.headers.get("Accept", "")


def is_fragment(request: HttpRequest) -> bool:
    # Set by the page script when it fetches a piece of a page to insert.
    return request.headers.get("X-Fragment") == "1"


def own_assignment(request: HttpRequest, assignment_id: int) -> Assignment:
    """The request user's own assignment, else 404 (never 403: existence is not revealed)."""
    assert request.user.is_authenticated
    assignment = assignment_for_reviewer(assignment_id=assignment_id, reviewer=request.user)
    if assignment is None:
        raise Http404("No such assignment.")
    return assignment


def own_candidate(assignment: Assignment, token: str) -> Candidate:
    """A candidate of the reviewer's own assignment, by its page token, else 404."""
    candidate = candidate_for_reviewer(assignment=assignment, token=token)
    if candidate is None:
        raise Http404("No such candidate.")
    # The assignment already read (with its campaign and group) serves the services' checks.
    candidate.assignment = assignment
    return candidate
