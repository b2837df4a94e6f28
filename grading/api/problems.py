"""One error format for the whole API: RFC 9457 problem details (`application/problem+json`).

Every error answer carries `type`, `title`, `status` and `detail`; field-level errors (a bad
query parameter, a bundle line that does not validate) are listed in the `problems` extension as
`{line, field, message}`, the same shape the bundle importer reports. `type` is `about:blank`
when the status says it all, else a `urn:gagar:problem:<slug>` named in docs/training-loop.md.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from http import HTTPStatus
from typing import Any

from django.http import HttpRequest, JsonResponse
from rest_framework import exceptions, status
from rest_framework.response import Response
from rest_framework.views import exception_handler

CONTENT_TYPE = "application/problem+json"
INVALID_BUNDLE = "urn:gagar:problem:invalid-bundle"
INVALID_PARAMETERS = "urn:gagar:problem:invalid-parameters"
IDEMPOTENCY_CONFLICT = "urn:gagar:problem:idempotency-key-reused"
FORBIDDEN = "urn:gagar:problem:forbidden"
THROTTLED = "urn:gagar:problem:throttled"
UNAVAILABLE = "urn:gagar:problem:unavailable"
GRADER_NOT_APPROVED = "urn:gagar:problem:grader-not-approved"


def problem_body(
    *,
    status_code: int,
    detail: str,
    type_: str = "about:blank",
    title: str | None = None,
    problems: Sequence[Mapping[str, Any]] | None = None,
    instance: str | None = None,
    **extra: Any,
) -> dict[str, Any]:
    body: dict[str, Any] = {
        "type": type_,
        "title": title or HTTPStatus(status_code).phrase,
        "status": status_code,
        "detail": detail,
    }
    if instance:
        body["instance"] = instance
    body["problems"] = [dict(p) for p in problems or ()]
    body.update(extra)
    return body


def problem_response(*, headers: Mapping[str, str] | None = None, **kwargs: Any) -> Response:
    body = problem_body(**kwargs)
    return Response(
        body, status=body["status"], content_type=CONTENT_TYPE, headers=dict(headers or {})
    )


def _field_problems(data: Any, prefix: str = "") -> list[dict[str, Any]]:
    """DRF's nested validation errors as flat `{line, field, message}` entries."""
    out: list[dict[str, Any]] = []
    if isinstance(data, Mapping):
        for key, value in data.items():
            name = f"{prefix}.{key}" if prefix else str(key)
            out += _field_problems(value, "" if key == "non_field_errors" else name)
    elif isinstance(data, list | tuple):
        for item in data:
            out += _field_problems(item, prefix)
    else:
        out.append({"line": None, "field": prefix, "message": str(data)})
    return out


_TYPES = {
    status.HTTP_403_FORBIDDEN: FORBIDDEN,
    status.HTTP_429_TOO_MANY_REQUESTS: THROTTLED,
}


def problem_exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    """DRF's handler (which sets WWW-Authenticate and Retry-After), reshaped as a problem."""
    response = exception_handler(exc, context)
    if response is None:
        return None  # not an API exception: Django's 500 handler answers (gagar_site/errors.py)
    request = context.get("request")
    path = request.path if request is not None else None
    code = response.status_code
    if isinstance(exc, exceptions.ValidationError):
        body = problem_body(
            status_code=code,
            type_=INVALID_PARAMETERS,
            title="Invalid request",
            detail="Some parameters are invalid; see problems.",
            problems=_field_problems(exc.detail),
            instance=path,
        )
    else:
        detail = getattr(exc, "detail", None)
        text = str(detail) if detail is not None else HTTPStatus(code).phrase
        extra: dict[str, Any] = {}
        wait = getattr(exc, "wait", None)
        if isinstance(exc, exceptions.Throttled) and wait is not None:
            extra["retry_after"] = int(wait + 0.999)
        body = problem_body(
            status_code=code,
            type_=_TYPES.get(code, "about:blank"),
            detail=text,
            instance=path,
            **extra,
        )
    response.data = body
    response.content_type = CONTENT_TYPE
    return response


def django_problem(request: HttpRequest, *, status_code: int, detail: str) -> JsonResponse:
    """The same shape for what Django answers before DRF runs (an unknown /api/ URL, a 500)."""
    response = JsonResponse(
        problem_body(status_code=status_code, detail=detail, instance=request.path),
        status=status_code,
        content_type=CONTENT_TYPE,
    )
    return response
