"""API tokens: a random secret shown once; only its SHA-256 is stored.

Who may hold one: staff, and service accounts (members of the "service accounts" group that
cannot sign in with a password and review nothing). A reviewer never can: every scope reaches
grader output (advantages carry the verdict's tiers), which blind review must not see. The rule
is checked when a token is made and again on every request (`token_owner_problem`), so an
account that later becomes a reviewer, or loses staff status, stops being able to use its tokens.
"""

from __future__ import annotations

import hashlib
import secrets
from collections.abc import Iterable

from django.contrib.auth.models import Group, User
from django.db import transaction
from django.utils import timezone

from grading.models import ApiToken

NAME_MAX_CHARS = 100  # ApiToken.name
TOKEN_PREFIX = "gagar_"  # noqa: S105 — a label, not a secret
SERVICE_ACCOUNTS_GROUP = "service accounts"
SCOPES: tuple[str, ...] = tuple(ApiToken.Scope.values)
DEFAULT_SCOPES: tuple[str, ...] = (ApiToken.Scope.SUBMIT, ApiToken.Scope.READ)


def hash_token(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def is_service_account(user: User) -> bool:
    return user.groups.filter(name=SERVICE_ACCOUNTS_GROUP).exists()


def token_owner_problem(
    user: User, *, service: bool | None = None, reviewer: bool | None = None
) -> str | None:
    """Why this account may not hold (or use) an API token, or None when it may.

    `service` and `reviewer` may be passed when the caller already read them (the per-request
    check reads them in the token's own query)."""
    if not user.is_active:
        return "the account is inactive"
    if user.is_staff:
        return None
    if not (is_service_account(user) if service is None else service):
        return (
            "only staff and service accounts hold API tokens; a reviewer account never does "
            "(tokens reach grader output)"
        )
    if user.has_usable_password():
        return "a service account cannot have a password (it must never sign in to review)"
    if user.review_campaigns.exists() if reviewer is None else reviewer:
        return "a service account cannot be a campaign reviewer"
    return None


def clean_scopes(scopes: Iterable[str]) -> list[str]:
    chosen = list(dict.fromkeys(scopes))
    unknown = [s for s in chosen if s not in SCOPES]
    if unknown:
        raise ValueError(f"unknown scope(s) {', '.join(unknown)}; use {', '.join(SCOPES)}")
    if not chosen:
        raise ValueError(f"a token needs at least one scope ({', '.join(SCOPES)})")
    return [s for s in SCOPES if s in chosen]


def api_token_create(
    *, user: User, name: str, scopes: Iterable[str] = DEFAULT_SCOPES
) -> tuple[ApiToken, str]:
    # Refused here, the same on every database: PostgreSQL cannot store a NUL, and a longer name
    # would be cut (SQLite) or fail at write time (PostgreSQL).
    if "\x00" in name:
        raise ValueError("a token name cannot contain NUL characters")
    if not 0 < len(name) <= NAME_MAX_CHARS:
        raise ValueError(f"a token name needs 1 to {NAME_MAX_CHARS} characters")
    chosen = clean_scopes(scopes)
    problem = token_owner_problem(user)
    if problem is not None:
        raise ValueError(f"{user.username}: {problem}")
    secret = TOKEN_PREFIX + secrets.token_urlsafe(32)
    token = ApiToken.objects.create(
        user=user,
        name=name,
        prefix=secret[: len(TOKEN_PREFIX) + 6],
        key_hash=hash_token(secret),
        scopes=chosen,
    )
    return token, secret


def service_account_create(*, username: str) -> User:
    """An account for a pipeline: no password (it cannot sign in), in the service group."""
    with transaction.atomic():
        user, created = User.objects.get_or_create(username=username)
        if created:
            user.set_unusable_password()
            user.save(update_fields=["password"])
        group, _ = Group.objects.get_or_create(name=SERVICE_ACCOUNTS_GROUP)
        user.groups.add(group)
    return user


def api_token_revoke(*, token: ApiToken) -> None:
    if token.revoked_at is None:
        token.revoked_at = timezone.now()
        token.save(update_fields=["revoked_at"])
