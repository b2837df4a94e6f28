"""Access checks and response shaping shared by the review views."""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Any

from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse

from review.models import Assignment, Candidate
from review.selectors import assignment_for_reviewer, candidate_for_reviewer

View = Callable[..., HttpResponse]


def wants_json(request: HttpRequest) -> bool:
    return "application/json" in request.headers.get("Accept", "")


def is_fragment(request: HttpRequest) -> bool:
    # Set by the page script when it fetches a piece of a page to insert.
    return request.headers.get("X-Fragment") == "1"


def staff_required(view: View) -> View:
    """Logged-in staff only; a logged-in reviewer gets 403, not a login loop."""

    @login_required
    @wraps(view)
    def wrapper(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        if not request.user.is_staff:
            raise PermissionDenied
        return view(request, *args, **kwargs)

    return wrapper


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
