"""Read endpoints for pipelines and dashboards: runs and steps (paginated), a group's grader
runs and verdicts. Token scope `read`; a reviewer never reaches them (see permissions.py)."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_field
from rest_framework import generics, serializers
from rest_framework.exceptions import NotFound
from rest_framework.pagination import PageNumberPagination
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from grading.api.schemas import problem_responses as errors
from grading.models import GraderRun, Group, Run, Step
from grading.selectors.api import (
    grader_runs_for_api,
    runs_for_api,
    steps_for_api,
    verdicts_for_api,
)
from grading.selectors.gate import grader_fit_artefact


class Pages(PageNumberPagination):
    page_size = 100
    page_size_query_param = "page_size"

    def get_page_size(self, request: Request) -> int | None:
        self.max_page_size = settings.GAGAR_API_MAX_PAGE_SIZE
        return super().get_page_size(request)


class RunSerializer(serializers.Serializer):
    name = serializers.CharField()
    metadata = serializers.DictField()
    created_at = serializers.DateTimeField()
    steps = serializers.IntegerField(source="n_steps")
    groups = serializers.IntegerField(source="n_groups")


class StepSerializer(serializers.Serializer):
    run = serializers.CharField(source="run.name")
    step = serializers.IntegerField(source="number")
    created_at = serializers.DateTimeField()
    groups = serializers.IntegerField(source="n_groups")


class RunsListApi(generics.ListAPIView[Run]):
    required_scopes = ("read",)
    serializer_class = RunSerializer
    pagination_class = Pages

    def get_queryset(self) -> Any:
        return runs_for_api()

    @extend_schema(
        operation_id="runs_list",
        summary="Training runs",
        responses={200: RunSerializer(many=True), **errors(400, 404)},
    )
    def get(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        return super().get(request, *args, **kwargs)


class StepsListApi(generics.ListAPIView[Step]):
    required_scopes = ("read",)
    serializer_class = StepSerializer
    pagination_class = Pages

    def get_queryset(self) -> Any:
        try:
            return steps_for_api(run_name=self.kwargs["run"])
        except Run.DoesNotExist as exc:
            raise NotFound(f"no run {self.kwargs['run']!r}") from exc

    @extend_schema(
        operation_id="steps_list",
        summary="Steps of a run",
        responses={200: StepSerializer(many=True), **errors(400, 404)},
    )
    def get(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        return super().get(request, *args, **kwargs)


class GraderRunSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    group_id = serializers.IntegerField()
    config = serializers.CharField(source="config.name")
    backend = serializers.CharField(source="config.backend")
    model = serializers.CharField(source="config.model")
    prompt_version = serializers.CharField(source="config.prompt_version")
    temperature = serializers.FloatField(source="config.temperature")
    seed = serializers.IntegerField(source="config.seed", allow_null=True)
    replica = serializers.IntegerField()
    status = serializers.ChoiceField(choices=GraderRun.Status.choices)
    deliveries = serializers.IntegerField()
    created_at = serializers.DateTimeField()
    started_at = serializers.DateTimeField(allow_null=True)
    finished_at = serializers.DateTimeField(allow_null=True)
    failure_reason = serializers.CharField(allow_blank=True)
    problems = serializers.ListField(child=serializers.JSONField())
    latency_s = serializers.FloatField(allow_null=True)
    input_tokens = serializers.IntegerField()
    output_tokens = serializers.IntegerField()
    llm_calls = serializers.IntegerField()
    tool_calls = serializers.IntegerField()
    cost_usd = serializers.FloatField(allow_null=True)
    fit_version = serializers.CharField(
        allow_blank=True, help_text="The analysis grader's fit that made the verdict, else ''."
    )


class GradeSerializer(serializers.Serializer):
    attempt_id = serializers.IntegerField()
    attempt_external_id = serializers.CharField(source="attempt.external_id")
    attempt_index = serializers.IntegerField(source="attempt.index")
    tier = serializers.IntegerField()
    rank_in_tier = serializers.IntegerField()
    weighted_score = serializers.FloatField()
    scores = serializers.DictField()
    severe_issues = serializers.ListField(child=serializers.JSONField())
    exploit_suspected = serializers.BooleanField()
    summary = serializers.CharField(allow_blank=True)


class VerdictSerializer(serializers.Serializer):
    grader_run_id = serializers.IntegerField(source="id")
    config = serializers.CharField(source="config.name")
    model = serializers.CharField(source="config.model")
    prompt_version = serializers.CharField(source="config.prompt_version")
    replica = serializers.IntegerField()
    finished_at = serializers.DateTimeField(allow_null=True)
    grades = GradeSerializer(many=True, help_text="Valid passing attempts, best first.")
    verdict = serializers.JSONField(
        help_text="The validated gagar.verdict.v1 document, candidates by attempt database id."
    )
    fit_version = serializers.CharField(allow_blank=True)
    analysis_fit = serializers.SerializerMethodField(
        help_text="The fitted artefact (gagar.analysis-fit.v1) that made the verdict, or null."
    )

    @extend_schema_field({"type": "object", "nullable": True})
    def get_analysis_fit(self, run: GraderRun) -> dict[str, Any] | None:
        return grader_fit_artefact(config=run.config, version=run.fit_version)


class GroupListSerializer(serializers.Serializer):
    group_id = serializers.IntegerField()
    count = serializers.IntegerField()


class GraderRunsOutput(GroupListSerializer):
    results = GraderRunSerializer(many=True)


class VerdictsOutput(GroupListSerializer):
    results = VerdictSerializer(many=True)


_CONFIG = OpenApiParameter("config", str, description="only this grader configuration")


def _group_or_404(group_id: int) -> None:
    if not Group.objects.filter(pk=group_id).exists():
        raise NotFound(f"no group {group_id}")


class GroupGraderRunsApi(APIView):
    required_scopes = ("read",)

    @extend_schema(
        operation_id="group_grader_runs",
        summary="A group's grader runs (every configuration and replica)",
        parameters=[_CONFIG],
        responses={200: GraderRunsOutput, **errors(404)},
    )
    def get(self, request: Request, group_id: int) -> Response:
        _group_or_404(group_id)
        runs = list(
            grader_runs_for_api(group_id=group_id, config_name=request.query_params.get("config"))
        )
        data = GraderRunSerializer(runs, many=True).data
        return Response({"group_id": group_id, "count": len(runs), "results": data})


class GroupVerdictsApi(APIView):
    required_scopes = ("read",)

    @extend_schema(
        operation_id="group_verdicts",
        summary="A group's verdicts (succeeded grader runs) with per-attempt grades",
        parameters=[_CONFIG],
        responses={200: VerdictsOutput, **errors(404)},
    )
    def get(self, request: Request, group_id: int) -> Response:
        _group_or_404(group_id)
        runs = list(
            verdicts_for_api(group_id=group_id, config_name=request.query_params.get("config"))
        )
        data = VerdictSerializer(runs, many=True).data
        return Response({"group_id": group_id, "count": len(runs), "results": data})
