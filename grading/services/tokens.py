"""API tokens: a random secret shown once; only its SHA-256 is stored."""

from __future__ import annotations

import hashlib
import secrets

from django.contrib.auth.models import User
from django.utils import timezone

from grading.models import ApiToken

TOKEN_PREFIX = "gagar_"  # noqa: S105 — a label, not a secret


def hash_token(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def api_token_create(*, user: User, name: str) -> tuple[ApiToken, str]:
    secret = TOKEN_PREFIX + secrets.token_urlsafe(32)
    token = ApiToken.objects.create(
        user=user, name=name, prefix=secret[: len(TOKEN_PREFIX) + 6], key_hash=hash_token(secret)
    )
    return token, secret


def api_token_revoke(*, token: ApiToken) -> None:
    if token.revoked_at is None:
        token.revoked_at = timezone.now()
        token.save(update_fields=["revoked_at"])
