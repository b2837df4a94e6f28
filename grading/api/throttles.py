"""Per-token request rates (DRF throttling): over the rate, 429 with `Retry-After`.

Counted in the default cache, which production shares between web processes (CACHE_URL);
keyed by token, so two training loops of one account do not share a budget. Staff sessions
are keyed by account.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from rest_framework.request import Request
from rest_framework.throttling import SimpleRateThrottle

from grading.models import ApiToken


class TokenRateThrottle(SimpleRateThrottle):
    scope = "api"

    def get_rate(self) -> str | None:
        # Read at request time (not class creation), so a changed setting applies at once.
        rate: str | None = settings.GAGAR_API_RATE or None
        return rate

    def get_cache_key(self, request: Request, view: Any) -> str | None:
        if isinstance(request.auth, ApiToken):
            ident = f"token:{request.auth.pk}"
        elif request.user and request.user.is_authenticated:
            ident = f"user:{request.user.pk}"
        else:
            return None  # refused before throttling anyway
        return self.cache_format % {"scope": self.scope, "ident": ident}
