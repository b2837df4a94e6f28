from __future__ import annotations

from typing import Any

from django.apps import AppConfig
from django.conf import settings
from django.core import checks


class SiteConfig(AppConfig):
    """Site-wide wiring that needs the app registry: login throttling and deploy checks."""

    name = "gagar_site"
    label = "gagar_site"
    verbose_name = "Site"

    def ready(self) -> None:
        from django.contrib.auth.signals import user_logged_in, user_login_failed

        from gagar_site import login_throttle

        user_login_failed.connect(login_throttle.on_login_failed, dispatch_uid="gagar-login-fail")
        user_logged_in.connect(login_throttle.on_logged_in, dispatch_uid="gagar-login-ok")
        checks.register(check_shared_cache, checks.Tags.security, deploy=True)


def check_shared_cache(app_configs: Any = None, **kwargs: Any) -> list[checks.CheckMessage]:
    backend = str(settings.CACHES["default"]["BACKEND"])
    if backend.endswith(("LocMemCache", "DummyCache")):
        return [
            checks.Warning(
                f"The default cache is {backend.rsplit('.', 1)[-1]}: each process counts failed "
                "logins on its own, so the login rate limit is multiplied by the process count.",
                hint="Set CACHE_URL (or REDIS_URL) to a Redis shared by every web process.",
                id="gagar.W001",
            )
        ]
    return []
