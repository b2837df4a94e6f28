"""API reads of the human side: calibrated tier labels (paginated rows) and the labels and
data-package exports (zips streamed from a temporary file). Token scopes `read` / `export`;
a reviewer can hold no such token and a reviewer session is refused (grading/api/permissions.py).
"""

from __future__ import annotations

from django.conf import settings
from django.http import HttpResponse
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from grading.api.exports import ZIP_RESPONSE, ExportView, zip_response
from grading.api.schemas import arrow_serializer
from grading.api.schemas import problem_responses as errors
from grading.models import GraderConfig
from grading.selectors.training import grader_config_by_name
from grading.services.exports import FORMATS
from review.analytics.archive import export_archive
from review.analytics.exports import LABEL_SCHEMA, labels_page
from review.analytics.exports import SCHEMA_VERSION as LABELS_SCHEMA_VERSION
from review.analytics.filters import Filters


class FiltersQuery(serializers.Serializer):
    run = serializers.CharField(required=False, help_text="run name")
    step = serializers.IntegerField(required=False, min_value=0)
    repo = serializers.CharField(required=False, help_text="repository owner/name")
    campaign = serializers.IntegerField(required=False, help_text="campaign id")

    def filters(self) -> Filters:
        d = self.validated_data
        return Filters(
            run=d.get("run"), step=d.get("step"), repo=d.get("repo"), campaign=d.get("campaign")
        )


class ConfigQuery(FiltersQuery):
    config = serializers.CharField(
        required=False, help_text="one grader configuration (default: every calibrated one)"
    )

    def validate_config(self, value: str) -> GraderConfig:
        try:
            return grader_config_by_name(name=value)
        except GraderConfig.DoesNotExist as exc:
            raise serializers.ValidationError(f"unknown grader configuration {value!r}") from exc


class LabelsQuery(ConfigQuery):
    page = serializers.IntegerField(required=False, min_value=1, default=1)
    page_size = serializers.IntegerField(required=False, min_value=1, default=500)


class ExportQuery(ConfigQuery):
    format = serializers.ChoiceField(choices=FORMATS, default="parquet")


LabelRowSerializer = arrow_serializer("LabelRow", LABEL_SCHEMA)


class LabelsPageSerializer(serializers.Serializer):
    schema = serializers.CharField(help_text=LABELS_SCHEMA_VERSION)
    count = serializers.IntegerField(help_text="attempts matching the filters")
    page = serializers.IntegerField()
    page_size = serializers.IntegerField()
    next = serializers.CharField(allow_null=True, help_text="URL of the next page")
    results = LabelRowSerializer(many=True)


class LabelsApi(APIView):
    required_scopes = ("read",)

    @extend_schema(
        operation_id="labels_list",
        summary="Calibrated tier labels, one row per attempt and grader configuration",
        description="Paginated by attempt (page, page_size): a page holds page_size attempts' "
        "rows, one per calibrated configuration (or one row without calibration).",
        parameters=[LabelsQuery],
        responses={200: LabelsPageSerializer, **errors(400)},
    )
    def get(self, request: Request) -> Response:
        query = LabelsQuery(data=request.query_params)
        query.is_valid(raise_exception=True)
        d = query.validated_data
        size = min(int(d["page_size"]), settings.GAGAR_API_MAX_PAGE_SIZE)
        page = int(d["page"])
        count, rows = labels_page(
            filters=query.filters(), config=d.get("config"), offset=(page - 1) * size, limit=size
        )
        following = None
        if page * size < count:
            params = request.query_params.copy()
            params["page"] = str(page + 1)
            following = request.build_absolute_uri(f"{request.path}?{params.urlencode()}")
        return Response(
            {
                "schema": LABELS_SCHEMA_VERSION,
                "count": count,
                "page": page,
                "page_size": size,
                "next": following,
                "results": rows,
            }
        )


def _export(request: Request, what: str) -> HttpResponse:
    query = ExportQuery(data=request.query_params)
    query.is_valid(raise_exception=True)
    d = query.validated_data
    archive = export_archive(
        what=what, fmt=d["format"], filters=query.filters(), config=d.get("config")
    )
    return zip_response(archive, what)


class LabelsExportApi(ExportView):
    required_scopes = ("export",)

    @extend_schema(
        operation_id="exports_labels",
        summary="Export calibrated tier labels (zip)",
        parameters=[ExportQuery],
        responses={**ZIP_RESPONSE, **errors(400)},
    )
    def get(self, request: Request) -> HttpResponse:
        return _export(request, "labels")


class PackageExportApi(ExportView):
    required_scopes = ("export",)

    @extend_schema(
        operation_id="exports_package",
        summary="Export the anonymized data package (zip)",
        parameters=[ExportQuery],
        responses={**ZIP_RESPONSE, **errors(400)},
    )
    def get(self, request: Request) -> HttpResponse:
        return _export(request, "package")
