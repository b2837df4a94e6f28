"""API tokens: a random secret shown once; only its SHA-256 is stored."""

from __future__ import annotations

import hashlib
import secrets

from django.contrib.auth.models import User
from django.utils import timezone

from grading.models import ApiToken

NAME_MAX_CHARS = 100  # ApiToken.name
TOKEN_PREFIX = "gagar_"  # noqa: S105 — a label, not a secret


def hash_token(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def api_token_create(*, user: User, name: str) -> tuple[ApiToken, str]:
    # Refused here, the same on every database: PostgreSQL cannot store a NUL, and a longer name
    # would be cut (SQLite) or fail at write time (PostgreSQL).
    if "\x00" in name:
        raise ValueError("a token name cannot contain NUL characters")
    if not 0 < len(name) <= NAME_MAX_CHARS:
        raise ValueError(f"a token name needs 1 to {NAME_MAX_CHARS} characters")
    secret = TOKEN_PREFIX + secrets.token_urlsafe(32)
    token = ApiToken.objects.create(
        user=user, name=name, prefix=secret[: len(TOKEN_PREFIX) + 6], key_hash=hash_token(secret)
    )
    return token, secret


def api_token_revoke(*, token: ApiToken) -> None:
    if token.revoked_at is None:
        token.revoked_at = timezone.now()
        token.save(update_fields=["revoked_at"])
