"""Log formatting and one access-log line per request.

`LOG_FORMAT=json` switches every handler to one JSON object per line (for a log shipper);
the default stays human-readable. Each request gets an id (the proxy's `X-Request-ID` when it
sends a sane one, else a fresh one), echoed in the response and attached to every log record
written while the request is handled.
"""

from __future__ import annotations

import json
import logging
import re
import time
import uuid
from collections.abc import Callable
from contextvars import ContextVar
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from django.utils.functional import empty

if TYPE_CHECKING:
    # Only for annotations: settings.py imports this module before Django is set up.
    from django.http import HttpRequest, HttpResponseBase

request_id_var: ContextVar[str] = ContextVar("gagar_request_id", default="")

_SAFE_REQUEST_ID = re.compile(r"^[A-Za-z0-9._:-]{1,128}$")
# Attributes every LogRecord has; anything else on a record came from `extra=` and is logged.
_RECORD_ATTRS = frozenset(
    vars(logging.LogRecord("x", logging.INFO, "x", 0, "x", None, None)).keys()
) | {"message", "asctime", "request_id"}
# Probes hit these every few seconds; their access lines go to DEBUG, not INFO.
_QUIET_PATHS = frozenset({"/healthz", "/readyz"})

access_logger = logging.getLogger("gagar.request")


class RequestIdFilter(logging.Filter):
    """Stamps `request_id` on every record (empty outside a request)."""

    def filter(self, record: logging.LogRecord) -> bool:
        if not getattr(record, "request_id", ""):
            record.request_id = request_id_var.get()
        return True


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        payload: dict[str, Any] = {
            "ts": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        request_id = getattr(record, "request_id", "")
        if request_id:
            payload["request_id"] = request_id
        for key, value in vars(record).items():
            if key not in _RECORD_ATTRS and not key.startswith("_"):
                payload[key] = value
        if record.exc_info:
            payload["exc_info"] = self.formatException(record.exc_info)
        if record.stack_info:
            payload["stack_info"] = self.formatStack(record.stack_info)
        # default=str: an odd `extra` value must never make a log line disappear.
        return json.dumps(payload, default=str, ensure_ascii=False)


def _incoming_request_id(request: HttpRequest) -> str:
    given = request.headers.get("X-Request-ID", "")
    return given if _SAFE_REQUEST_ID.match(given) else uuid.uuid4().hex


def _loaded_user_id(request: HttpRequest) -> int | None:
    """The user id if the request already loaded its user; never loads it for the log line.

    Loading it here would query the database on requests that never needed it (`/healthz`),
    and turn a database outage into an error on every one of them.
    """
    user = getattr(request, "user", None)
    loaded = getattr(user, "_wrapped", user)
    if loaded is None or loaded is empty or not loaded.is_authenticated:
        return None
    return int(loaded.pk)


class RequestLogMiddleware:
    """Outermost middleware: sets the request id, logs method, path, status and duration."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponseBase]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponseBase:
        request_id = _incoming_request_id(request)
        token = request_id_var.set(request_id)
        started = time.perf_counter()
        try:
            response = self.get_response(request)
            response["X-Request-ID"] = request_id
            access_logger.log(
                logging.DEBUG if request.path in _QUIET_PATHS else logging.INFO,
                "%s %s %s",
                request.method,
                request.path,
                response.status_code,
                extra={
                    "method": request.method,
                    "path": request.path,
                    "status": response.status_code,
                    "duration_ms": round((time.perf_counter() - started) * 1000, 1),
                    "user_id": _loaded_user_id(request),
                },
            )
            return response
        finally:
            request_id_var.reset(token)


def logging_config(*, log_format: str, level: str) -> dict[str, Any]:
    """The LOGGING dict for `LOG_FORMAT` `plain` or `json`."""
    if log_format not in ("plain", "json"):
        raise ValueError(f"LOG_FORMAT={log_format!r}: use plain or json")
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "filters": {"request_id": {"()": "gagar_site.logging.RequestIdFilter"}},
        "formatters": {
            "plain": {"format": "%(asctime)s %(levelname)s %(name)s %(message)s"},
            "json": {"()": "gagar_site.logging.JsonFormatter"},
        },
        "handlers": {
            "console": {
                "class": "logging.StreamHandler",
                "formatter": log_format,
                "filters": ["request_id"],
            }
        },
        "root": {"handlers": ["console"], "level": level},
        # Django's own request logger repeats 4xx/5xx that the access line already records;
        # keep its errors (they carry the traceback) and drop its warnings.
        "loggers": {
            "django.request": {"level": "ERROR"},
            # Django's own console handler (debug only) printed each of its messages a second
            # time beside ours ("Watching for file changes" twice under runserver): ours only.
            "django": {"handlers": []},
        },
    }
