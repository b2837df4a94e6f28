"""Access checks and response shaping shared by the review views (staff_required is site-wide:
`gagar_site.access`)."""

from __future__ import annotations

from django.http import HttpRequest

from review.models import Assignment
from review.selectors.reviewing import assignment_for_reviewer


def wants_json(request: HttpRequest) -> bool:
    return "application/json" in request.headers.get("Accept", "")


def is_fragment(request: HttpRequest) -> bool:
    # Set by the page script when it fetches a piece of a page to insert.
    return request.headers.get("X-Fragment") == "1"


def own_assignment(request: HttpRequest, assignment_id: int) -> Assignment:
    """The request user's own assignment, else 404 (never 403: existence is not revealed)."""
    assert request.user.is_authenticated
    return assignment_for_reviewer(assignment_id=assignment_id, reviewer=request.user)
