"""The import API a training loop calls: the same bundle as `manage.py import bundle`."""

from __future__ import annotations

import io
import json
from typing import Any

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers, status
from rest_framework.parsers import BaseParser
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from grading.api.problems import INVALID_BUNDLE, problem_response
from grading.api.schemas import BundleGroupSerializer, ProblemItemSerializer, problem_responses
from grading.services.imports import ImportFailedError, ImportReport, groups_import
from grading.services.sources import bundle_records

# The two bodies the bundle endpoints take (the same content either way).
BUNDLE_REQUEST = {
    "application/x-ndjson": {"type": "string", "format": "binary"},
    "application/json": BundleGroupSerializer(many=True),
}


class RawBundleParser(BaseParser):
    """Hands the body through untouched; the bundle reader does its own, line-located parsing."""

    media_type = "*/*"

    def parse(self, stream: Any, media_type: str | None = None, parser_context: Any = None) -> Any:
        return stream.read() if stream is not None else b""


def as_jsonl(body: bytes) -> bytes:
    """A JSON array or a single object is accepted too; each element becomes one line."""
    head = body.lstrip()[:1]
    if head not in (b"[", b"{"):
        return body
    try:
        value = json.loads(body)
    except (json.JSONDecodeError, UnicodeDecodeError):
        return body  # JSON Lines (or broken): let the reader report it by line
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


class BundleImportApi(APIView):
    parser_classes = [RawBundleParser]
    required_scopes = ("submit",)

    class GroupSerializer(serializers.Serializer):
        id = serializers.IntegerField(source="group_id")
        group_id = serializers.CharField(source="external_id", allow_null=True)
        run = serializers.CharField()
        step = serializers.IntegerField()
        task = serializers.CharField()
        outcome = serializers.ChoiceField(choices=["created", "unchanged", "replaced"])

    class BundleImportOutputSerializer(serializers.Serializer):
        summary = serializers.CharField()
        groups = serializers.ListField(child=serializers.DictField())
        problems = ProblemItemSerializer(many=True)

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
            "groups": [dict(self.GroupSerializer(r).data) for r in report.results],
            "problems": [dict(ProblemItemSerializer(p).data) for p in report.problems],
        }
