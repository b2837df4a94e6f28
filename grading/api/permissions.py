"""Who may call the API: a token with the view's scope, or a signed-in staff session."""

from __future__ import annotations

from typing import Any

from rest_framework.permissions import BasePermission
from rest_framework.request import Request

from grading.models import ApiToken


class IsApiClientOrStaff(BasePermission):
    """A Bearer token carrying one of the view's `required_scopes`, or a staff session.

    A reviewer's session is refused, and a reviewer cannot hold a token at all
    (grading/services/tokens.py): every endpoint hands out grader output (verdicts, tiers inside
    the advantages, labels) that blind review must not see, or imports rollouts.
    """

    message = "This endpoint needs an API token with the right scope, or a staff session."

    def has_permission(self, request: Request, view: Any) -> bool:
        user = request.user
        if not (user and user.is_authenticated):
            return False
        token = request.auth
        if isinstance(token, ApiToken):
            needed: tuple[str, ...] = getattr(view, "required_scopes", ())
            if not needed:
                return False  # a view that names no scope is for staff sessions only
            if not set(needed) & set(token.scopes or ()):
                self.message = (
                    f"This token lacks the scope this endpoint needs ({' or '.join(needed)}); "
                    f"it has: {', '.join(token.scopes or ()) or 'none'}."
                )
                return False
            return True
        return bool(user.is_staff)
