"""Login rate limiting: after N failed logins for one username from one address within the
window, further attempts for that pair are refused with 429 until the window ends — even with
the right password, so guessing cannot continue at a slower pace behind the lock.

Counts live in Django's cache, which must be shared between processes in production (Redis via
`CACHE_URL`; a deploy check warns otherwise). The window is fixed from the first failure: the
counter's expiry is set when it is created and an increment keeps it.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.core.cache import cache
from django.http import HttpRequest, HttpResponse, HttpResponseBase
from django.shortcuts import render

logger = logging.getLogger(__name__)

# The views whose POST is a password login: the site's and the admin's.
LOGIN_VIEW_NAMES = frozenset({"login", "admin:login"})


def client_ip(request: HttpRequest) -> str:
    """The client's address. Behind `GAGAR_PROXY_COUNT` trusted proxies it is the entry that
    many places from the right of X-Forwarded-For (entries further left are client-supplied)."""
    hops = settings.GAGAR_PROXY_COUNT
    if hops > 0:
        forwarded = [
            part.strip()
            for part in request.headers.get("X-Forwarded-For", "").split(",")
            if part.strip()
        ]
        if len(forwarded) >= hops:
            return forwarded[-hops]
    return str(request.META.get("REMOTE_ADDR", ""))


def _key(username: str, ip: str) -> str:
    digest = hashlib.sha256(f"{username.strip().lower()}\x00{ip}".encode()).hexdigest()
    return f"gagar:login-failures:{digest[:32]}"


def failures(*, username: str, ip: str) -> int:
    return int(cache.get(_key(username, ip), 0))


def is_locked(*, username: str, ip: str) -> bool:
    return failures(username=username, ip=ip) >= settings.GAGAR_LOGIN_MAX_FAILURES


def record_failure(*, username: str, ip: str) -> int:
    key = _key(username, ip)
    window = settings.GAGAR_LOGIN_WINDOW_S
    # add() is a no-op when the counter exists, so the window starts at the first failure.
    cache.add(key, 0, timeout=window)
    try:
        count = cache.incr(key)
    except ValueError:
        # The counter expired between add() and incr(): this failure opens a new window.
        cache.set(key, 1, timeout=window)
        count = 1
    if count == settings.GAGAR_LOGIN_MAX_FAILURES:
        logger.warning(
            "login locked after %s failures", count, extra={"ip": ip, "event": "login_locked"}
        )
    return int(count)


def clear_failures(*, username: str, ip: str) -> None:
    cache.delete(_key(username, ip))


def on_login_failed(
    sender: Any, credentials: dict[str, Any], request: Any = None, **_: Any
) -> None:
    """`user_login_failed` receiver: every failed password check counts."""
    if request is None:
        return
    record_failure(username=str(credentials.get("username", "")), ip=client_ip(request))


def on_logged_in(sender: Any, request: Any = None, user: Any = None, **_: Any) -> None:
    """`user_logged_in` receiver: a success below the limit resets that pair's count."""
    if request is None or user is None:
        return
    clear_failures(username=user.get_username(), ip=client_ip(request))


class LoginThrottleMiddleware:
    """Refuses a login POST for a locked username+address pair before any password is checked."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponseBase]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponseBase:
        return self.get_response(request)

    def process_view(
        self,
        request: HttpRequest,
        view_func: Callable[..., Any],
        view_args: Any,
        view_kwargs: Any,
    ) -> HttpResponse | None:
        if request.method != "POST":
            return None
        match = request.resolver_match
        if match is None or match.view_name not in LOGIN_VIEW_NAMES:
            return None
        username = request.POST.get("username", "")
        if not is_locked(username=username, ip=client_ip(request)):
            return None
        minutes = max(1, settings.GAGAR_LOGIN_WINDOW_S // 60)
        response = render(
            request,
            "registration/login_locked.html",
            {"minutes": minutes},
            status=429,
        )
        response["Retry-After"] = str(settings.GAGAR_LOGIN_WINDOW_S)
        return response
