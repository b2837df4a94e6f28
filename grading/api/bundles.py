"""The import API a training loop calls: the same bundle as `manage.py import bundle`."""

from __future__ import annotations

import io
import json
from typing import Any

from django.conf import settings
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers, status
from rest_framework.exceptions import APIException
from rest_framework.parsers import BaseParser
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from grading.api.problems import INVALID_BUNDLE, problem_response
from grading.api.schemas import BundleGroupSerializer, ProblemItemSerializer, problem_responses
from grading.domain import safe_json
from grading.selectors.training import group_key
from grading.services.imports import OUTCOMES, ImportFailedError, ImportReport, groups_import
from grading.services.sources import bundle_records

# The two bodies the bundle endpoints take (the same content either way).
BUNDLE_REQUEST = {
    "application/x-ndjson": {"type": "string", "format": "binary"},
    "application/json": BundleGroupSerializer(many=True),
}


class BodyTooLargeError(APIException):
    status_code = status.HTTP_413_REQUEST_ENTITY_TOO_LARGE
    default_code = "body_too_large"


_READ_CHUNK = 1024 * 1024


class RawBundleParser(BaseParser):
    """Hands the body through untouched; the bundle reader does its own, line-located parsing.

    The body is refused past GAGAR_MAX_UPLOAD_BYTES by its Content-Length, and while it is
    read for a body that did not say (or lied): never buffered beyond the limit. DRF answers
    415 for any other Content-Type (text/plain, images and form bodies are not bundles).
    """

    media_type = "application/x-ndjson"

    def parse(self, stream: Any, media_type: str | None = None, parser_context: Any = None) -> Any:
        limit = settings.GAGAR_MAX_UPLOAD_BYTES
        request = (parser_context or {}).get("request")
        declared = request.META.get("CONTENT_LENGTH") if request is not None else None
        if declared and str(declared).isdigit() and int(declared) > limit:
            raise BodyTooLargeError(
                f"the body is {declared} bytes, over the limit of {limit} "
                "(GAGAR_MAX_UPLOAD_BYTES); send the groups in several requests"
            )
        if stream is None:
            return b""
        chunks: list[bytes] = []
        size = 0
        while chunk := stream.read(_READ_CHUNK):
            size += len(chunk)
            if size > limit:
                raise BodyTooLargeError(
                    f"the body is over the limit of {limit} bytes (GAGAR_MAX_UPLOAD_BYTES); "
                    "send the groups in several requests"
                )
            chunks.append(chunk)
        return b"".join(chunks)


class JsonBundleParser(RawBundleParser):
    media_type = "application/json"


class JsonLinesBundleParser(RawBundleParser):
    media_type = "application/jsonl"


# The media types a bundle may come as.
BUNDLE_PARSERS = [RawBundleParser, JsonBundleParser, JsonLinesBundleParser]


def as_jsonl(body: bytes) -> bytes:
    """A JSON array or a single object is accepted too; each element becomes one line."""
    head = body.lstrip()[:1]
    if head not in (b"[", b"{"):
        return body
    try:
        value = safe_json.loads(body)
    except (json.JSONDecodeError, UnicodeDecodeError, safe_json.JsonLimitError):
        return body  # JSON Lines (or broken, or refused): let the reader report it by line
    items = value if isinstance(value, list) else [value]
    return b"\n".join(json.dumps(item).encode() for item in items) + b"\n"


def import_problem(report: ImportReport, **extra: Any) -> Response:
    """A refused bundle: 400 problem details with every problem (file line, field, message)."""
    return problem_response(
        status_code=status.HTTP_400_BAD_REQUEST,
        type_=INVALID_BUNDLE,
        title="Invalid bundle",
        detail=report.summary(),
        problems=[vars(p) for p in report.problems],
        **extra,
    )


def empty_body_problem() -> Response:
    return problem_response(
        status_code=status.HTTP_400_BAD_REQUEST,
        type_=INVALID_BUNDLE,
        title="Invalid bundle",
        detail="the body holds no groups",
        problems=[{"line": None, "field": "", "message": "the body holds no groups"}],
    )


# Shared by both import endpoints (the training API's too): one enum in the schema.
OUTCOME_HELP = (
    "created; unchanged (the same content is stored: nothing written); completed (the same "
    "content, but a test output stored cut was rewritten with more of it, under a larger "
    "GAGAR_MAX_TEST_OUTPUT_BYTES: the group, its reviews and grades kept); replaced (other "
    "content, with replace: written again)"
)


class ImportedGroupSerializer(serializers.Serializer):
    group_id = serializers.CharField(
        help_text="The group's external id (the bundle's group_id, or `<run>/<step>/<task>`)."
    )
    group_db_id = serializers.IntegerField(help_text="The group's database id (extra).")
    run = serializers.CharField()
    step = serializers.IntegerField()
    task = serializers.CharField()
    outcome = serializers.ChoiceField(choices=OUTCOMES, help_text=OUTCOME_HELP)


class BundleImportOutputSerializer(serializers.Serializer):
    summary = serializers.CharField()
    groups = ImportedGroupSerializer(many=True)
    problems = ProblemItemSerializer(many=True)


class BundleImportApi(APIView):
    parser_classes = BUNDLE_PARSERS
    required_scopes = ("submit",)

    @extend_schema(
        operation_id="bundles_import",
        summary="Import groups (gagar.group.v1)",
        description="Body: JSON Lines (one group per line), a JSON array of groups, or one group. "
        "All-or-nothing unless partial=1. Re-sending identical content is a no-op.",
        parameters=[
            OpenApiParameter("partial", bool, description="import valid groups, report the rest"),
            OpenApiParameter("replace", bool, description="overwrite groups whose content changed"),
        ],
        request=BUNDLE_REQUEST,
        responses={
            201: BundleImportOutputSerializer,
            200: BundleImportOutputSerializer,
            **problem_responses(400),
        },
    )
    def post(self, request: Request) -> Response:
        partial = request.query_params.get("partial") in ("1", "true")
        replace = request.query_params.get("replace") in ("1", "true")
        body = as_jsonl(request.data if isinstance(request.data, bytes) else b"")
        if not body.strip():
            return empty_body_problem()
        _, records = bundle_records(stream=io.BytesIO(body), source="request", base_dir=None)
        try:
            report = groups_import(records=records, partial=partial, replace=replace)
        except ImportFailedError as exc:
            return import_problem(exc.report)
        if report.problems and not report.results:
            return import_problem(report)
        code: int = status.HTTP_201_CREATED if report.count("created") else status.HTTP_200_OK
        return Response(self._output(report), status=code)

    def _output(self, report: ImportReport) -> dict[str, Any]:
        return {
            "summary": report.summary(),
            "groups": [
                dict(
                    ImportedGroupSerializer(
                        {
                            "group_id": group_key(
                                external_id=r.external_id, run=r.run, step=r.step, task_id=r.task
                            ),
                            "group_db_id": r.group_id,
                            "run": r.run,
                            "step": r.step,
                            "task": r.task,
                            "outcome": r.outcome,
                        }
                    ).data
                )
                for r in report.results
            ],
            "problems": [dict(ProblemItemSerializer(p).data) for p in report.problems],
        }
