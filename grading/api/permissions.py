"""Who may call the API: training loops with a token, and staff from a browser session."""

from __future__ import annotations

from typing import Any

from rest_framework.permissions import BasePermission
from rest_framework.request import Request

from grading.models import ApiToken


class IsApiClientOrStaff(BasePermission):
    """A Bearer token (any active user's), or a signed-in staff session.

    A reviewer's session is refused: the API hands out grades and advantages, which carry the
    grader's verdict that blind review must not see, and it imports rollouts.
    """

    def has_permission(self, request: Request, view: Any) -> bool:
        user = request.user
        if not (user and user.is_authenticated):
            return False
        return isinstance(request.auth, ApiToken) or bool(user.is_staff)
