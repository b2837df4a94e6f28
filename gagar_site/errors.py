"""The 500 handler: a lost database is a 503 (retry later), not a server error page.

Django calls `handler500` for any uncaught exception, in a view or in a middleware, while the
exception is still being handled, so `sys.exc_info()` names it. Nothing here may touch the
database (no session, no user, no template context processors): it is what just failed.
"""

from __future__ import annotations

import sys

from django.db import InterfaceError, OperationalError
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views.defaults import page_not_found, server_error

RETRY_AFTER_S = "10"
UNAVAILABLE_HTML = (
    "<!doctype html><html lang=en><head><meta charset=utf-8>"
    "<title>Temporarily unavailable</title></head><body><h1>Temporarily unavailable</h1>"
    "<p>The database cannot be reached. Nothing you saved before this was lost; "
    "please try again in a few seconds.</p></body></html>"
)


def _database_down() -> bool:
    exc = sys.exc_info()[1]
    return isinstance(exc, (OperationalError, InterfaceError))


def _wants_json(request: HttpRequest) -> bool:
    return request.path.startswith("/api/") or "application/json" in request.headers.get(
        "Accept", ""
    )


def server_error_or_unavailable(request: HttpRequest) -> HttpResponse:
    if not _database_down():
        if request.path.startswith("/api/"):
            # The API's one error format (RFC 9457), built without the database.
            from grading.api.problems import django_problem

            return django_problem(request, status_code=500, detail="internal error")
        return server_error(request)
    response: HttpResponse
    if _wants_json(request):
        # An RFC 9457 problem like every API error; `ok` is kept for existing callers.
        response = JsonResponse(
            {
                "type": "urn:gagar:problem:unavailable",
                "title": "Service Unavailable",
                "status": 503,
                "detail": "database unavailable, retry later",
                "problems": [],
                "ok": False,
            },
            status=503,
            content_type="application/problem+json",
        )
    else:
        response = HttpResponse(UNAVAILABLE_HTML, status=503)
    response["Retry-After"] = RETRY_AFTER_S
    return response


def not_found(request: HttpRequest, exception: Exception) -> HttpResponse:
    if request.path.startswith("/api/"):
        from grading.api.problems import django_problem

        return django_problem(request, status_code=404, detail=f"no endpoint {request.path}")
    return page_not_found(request, exception)
