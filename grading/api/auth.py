from __future__ import annotations

from typing import Any

from django.contrib.auth.models import User
from django.db.models import Exists, OuterRef
from django.utils import timezone
from rest_framework import authentication, exceptions
from rest_framework.request import Request

from grading.models import ApiToken
from grading.services.tokens import SERVICE_ACCOUNTS_GROUP, hash_token, token_owner_problem


class HashedTokenAuthentication(authentication.BaseAuthentication):
    """`Authorization: Bearer <token>`; looked up by hash, never stored in clear.

    The owner's right to hold a token is checked on every request in the same query (an
    account that became a reviewer, or lost staff status, cannot use its old tokens)."""

    keyword = "Bearer"

    def authenticate(self, request: Request) -> tuple[Any, ApiToken] | None:
        header = authentication.get_authorization_header(request).split()
        if not header or header[0].lower() not in (b"bearer", b"token"):
            return None
        if len(header) != 2:
            raise exceptions.AuthenticationFailed("Authorization header must be 'Bearer <token>'.")
        try:
            secret = header[1].decode()
        except UnicodeDecodeError as exc:
            raise exceptions.AuthenticationFailed("Invalid token.") from exc
        groups = User.groups.through.objects.filter(
            user_id=OuterRef("user_id"), group__name=SERVICE_ACCOUNTS_GROUP
        )
        campaigns = User.review_campaigns.through.objects.filter(user_id=OuterRef("user_id"))
        token = (
            ApiToken.objects.select_related("user")
            .annotate(owner_is_service=Exists(groups), owner_reviews=Exists(campaigns))
            .filter(key_hash=hash_token(secret), revoked_at__isnull=True)
            .first()
        )
        if token is None or not token.user.is_active:
            raise exceptions.AuthenticationFailed("Invalid or revoked token.")
        problem = token_owner_problem(
            token.user,
            service=bool(token.owner_is_service),
            reviewer=bool(token.owner_reviews),
        )
        if problem is not None:
            raise exceptions.PermissionDenied(f"This token cannot be used: {problem}.")
        # One write per minute at most: the hot path stays read-only.
        now = timezone.now()
        if token.last_used_at is None or (now - token.last_used_at).total_seconds() > 60:
            ApiToken.objects.filter(pk=token.pk).update(last_used_at=now)
        return token.user, token

    def authenticate_header(self, request: Request) -> str:
        return self.keyword
