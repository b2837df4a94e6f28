"""The advantages export over HTTP: the files `manage.py export_advantages` writes, as one zip
streamed from a temporary file. Token scope `export`."""

from __future__ import annotations

from typing import Any, cast

from django.http import FileResponse, HttpResponse
from django.utils import timezone
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers
from rest_framework.exceptions import NotFound
from rest_framework.request import Request
from rest_framework.views import APIView

from grading.api.problems import problem_response
from grading.api.schemas import ProblemSerializer
from grading.api.schemas import problem_responses as errors
from grading.api.training import AdvantagesQuery, config_named
from grading.models import Group
from grading.services.archives import advantages_archive
from grading.services.exports import FORMATS, ExportInvariantError

ZIP = "application/zip"


def zip_response(archive: object, what: str) -> HttpResponse:
    name = f"gagar-{what}-{timezone.now():%Y%m%d-%H%M%S}.zip"
    response = FileResponse(archive, as_attachment=True, filename=name, content_type=ZIP)
    return cast(HttpResponse, response)


ZIP_RESPONSE = {
    (200, ZIP): OpenApiResponse(
        OpenApiTypes.BINARY, description="A zip of the export files and manifest.json."
    )
}


class ExportView(APIView):
    """`?format=` names the export's file format (jsonl, csv, parquet) here, not one of DRF's
    renderers: negotiation falls back to JSON (used for error answers) instead of a 404."""

    def perform_content_negotiation(self, request: Request, force: bool = False) -> Any:
        return super().perform_content_negotiation(request, force=True)


class AdvantagesExportQuery(AdvantagesQuery):
    deadline = None  # type: ignore[assignment]  # an export never waits for grading
    run = serializers.CharField(help_text="run name")
    step = serializers.IntegerField(required=False, min_value=0, help_text="one step only")
    format = serializers.ChoiceField(choices=FORMATS, default="parquet")


class AdvantagesExportApi(ExportView):
    required_scopes = ("export",)

    @extend_schema(
        operation_id="exports_advantages",
        summary="Export gagar.v2 advantages of a run or step (zip)",
        parameters=[AdvantagesExportQuery],
        responses={
            **ZIP_RESPONSE,
            **errors(400, 404),
            (409, "application/problem+json"): OpenApiResponse(
                ProblemSerializer, description="An invariant failed; nothing was exported."
            ),
        },
    )
    def get(self, request: Request) -> HttpResponse:
        query = AdvantagesExportQuery(data=request.query_params)
        query.is_valid(raise_exception=True)
        data = query.validated_data
        config = config_named(data.get("config"))
        groups = Group.objects.filter(step__run__name=data["run"])
        if data.get("step") is not None:
            groups = groups.filter(step__number=data["step"])
        if not groups.exists():
            raise NotFound(f"no groups in run {data['run']!r}")
        try:
            archive = advantages_archive(
                run_name=data["run"],
                step=data.get("step"),
                fmt=data["format"],
                config=config,
                params=query.params(),
            )
        except ExportInvariantError as exc:
            return cast(
                HttpResponse,
                problem_response(
                    status_code=409,
                    type_="urn:gagar:problem:export-invariant",
                    detail=f"export refused, invariant violated: {exc}",
                ),
            )
        return zip_response(archive, "advantages")
