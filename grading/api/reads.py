"""Read endpoints for pipelines and dashboards: runs and steps (paginated), a group's grader
runs and verdicts (`gagar.v2` rows, grading/selectors/api.py). Token scope `read`; a reviewer
never reaches them (see permissions.py)."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import generics, serializers
from rest_framework.exceptions import NotFound
from rest_framework.pagination import PageNumberPagination
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from grading.api.schemas import problem_responses as errors
from grading.domain.advantage_columns import SCHEMA_VERSION
from grading.models import GraderRun, Group, Run, Step
from grading.selectors.api import (
    attempt_external_ids,
    grader_run_row,
    grader_runs_for_api,
    group_for_api,
    group_head,
    runs_for_api,
    steps_for_api,
    verdict_row,
    verdicts_for_api,
)


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
    grader_run_id = serializers.CharField(
        help_text="The grader run (its database id as a string; verdict_id in advantage rows)."
    )
    group_id = serializers.CharField(help_text="The group's external id (the join key).")
    group_db_id = serializers.IntegerField(help_text="The group's database id (extra).")
    config = serializers.CharField()
    backend = serializers.CharField()
    model = serializers.CharField(allow_blank=True)
    prompt_version = serializers.CharField(
        allow_blank=True, help_text="The prompt the run used (not started: its configuration's)."
    )
    temperature = serializers.FloatField()
    seed = serializers.IntegerField(allow_null=True)
    replica = serializers.IntegerField()
    status = serializers.ChoiceField(choices=GraderRun.Status.choices)
    deliveries = serializers.IntegerField()
    created_at = serializers.DateTimeField()
    started_at = serializers.DateTimeField(allow_null=True)
    finished_at = serializers.DateTimeField(allow_null=True)
    failure_reason = serializers.CharField(allow_blank=True)
    problems = serializers.ListField(child=serializers.CharField())
    latency_s = serializers.FloatField(allow_null=True)
    input_tokens = serializers.IntegerField()
    output_tokens = serializers.IntegerField()
    llm_calls = serializers.IntegerField()
    tool_calls = serializers.IntegerField()
    cost_usd = serializers.FloatField(allow_null=True)
    fit_version = serializers.CharField(
        allow_blank=True, help_text="The analysis grader's fit that made the verdict, else ''."
    )


class GradeScoreSerializer(serializers.Serializer):
    score = serializers.IntegerField(help_text="1–5.")
    rationale = serializers.CharField(allow_blank=True, required=False)
    evidence = serializers.ListField(
        child=serializers.CharField(), required=False, help_text="Ids of the verdict's evidence."
    )


class SevereIssueSerializer(serializers.Serializer):
    category = serializers.CharField()
    description = serializers.CharField(allow_blank=True, required=False)
    evidence = serializers.ListField(child=serializers.CharField(), required=False)


class GradeSerializer(serializers.Serializer):
    attempt_id = serializers.CharField(
        help_text="The bundle's attempt id, unique within its group: (group_id, attempt_id) "
        "is the key."
    )
    attempt_db_id = serializers.IntegerField(help_text="The attempt's database id (extra).")
    attempt_index = serializers.IntegerField()
    tier = serializers.IntegerField(
        allow_null=True, min_value=1, max_value=3, help_text="The grader's tier 1–3."
    )
    exploit_suspected = serializers.BooleanField(help_text="The grader suspects an exploit.")
    exploit = serializers.BooleanField(
        help_text="A confirmed exploit / test tampering (the attempt's status)."
    )
    rank_in_tier = serializers.IntegerField(allow_null=True)
    weighted_score = serializers.FloatField()
    scores = serializers.DictField(child=GradeScoreSerializer(), help_text="Per rubric criterion.")
    severe_issues = SevereIssueSerializer(many=True)
    summary = serializers.CharField(allow_blank=True)


class VerdictSerializer(serializers.Serializer):
    grader_run_id = serializers.CharField()
    group_id = serializers.CharField(help_text="The group's external id (the join key).")
    group_db_id = serializers.IntegerField()
    config = serializers.CharField()
    model = serializers.CharField(allow_blank=True)
    prompt_version = serializers.CharField(allow_blank=True)
    replica = serializers.IntegerField()
    finished_at = serializers.DateTimeField(allow_null=True)
    grades = GradeSerializer(many=True, help_text="Valid passing attempts, best first.")
    verdict = serializers.JSONField(
        allow_null=True,
        help_text="The validated gagar.verdict.v1 document; its candidates (keys, ordering, "
        "ties, evidence) are named by the bundle's attempt ids.",
    )
    fit_version = serializers.CharField(allow_blank=True)
    analysis_fit = serializers.JSONField(
        allow_null=True,
        help_text="The fitted artefact (gagar.analysis-fit.v1) that made the verdict, or null.",
    )


class GroupListSerializer(serializers.Serializer):
    schema = serializers.CharField(help_text=SCHEMA_VERSION)
    run = serializers.CharField()
    step = serializers.IntegerField()
    task_id = serializers.CharField()
    group_id = serializers.CharField(help_text="The group's external id (the join key).")
    group_db_id = serializers.IntegerField(help_text="The group's database id (in the path).")
    count = serializers.IntegerField()


class GraderRunsOutput(GroupListSerializer):
    results = GraderRunSerializer(many=True)


class VerdictsOutput(GroupListSerializer):
    results = VerdictSerializer(many=True)


_CONFIG = OpenApiParameter("config", str, description="only this grader configuration")


def _group_or_404(group_db_id: int) -> Group:
    try:
        return group_for_api(group_db_id=group_db_id)
    except Group.DoesNotExist as exc:
        raise NotFound(f"no group {group_db_id}") from exc


def _listing(head: dict[str, Any], results: Any) -> dict[str, Any]:
    return {"schema": SCHEMA_VERSION, **head, "count": len(results), "results": results}


class GroupGraderRunsApi(APIView):
    required_scopes = ("read",)

    @extend_schema(
        operation_id="group_grader_runs",
        summary="A group's grader runs (every configuration and replica)",
        parameters=[_CONFIG],
        responses={200: GraderRunsOutput, **errors(404)},
    )
    def get(self, request: Request, group_db_id: int) -> Response:
        head = group_head(group=_group_or_404(group_db_id))
        runs = grader_runs_for_api(
            group_id=group_db_id, config_name=request.query_params.get("config")
        )
        rows = [grader_run_row(r, head) for r in runs]
        return Response(_listing(head, GraderRunSerializer(rows, many=True).data))


class GroupVerdictsApi(APIView):
    required_scopes = ("read",)

    @extend_schema(
        operation_id="group_verdicts",
        summary="A group's verdicts (succeeded grader runs) with per-attempt grades",
        parameters=[_CONFIG],
        responses={200: VerdictsOutput, **errors(404)},
    )
    def get(self, request: Request, group_db_id: int) -> Response:
        head = group_head(group=_group_or_404(group_db_id))
        runs = verdicts_for_api(
            group_id=group_db_id, config_name=request.query_params.get("config")
        )
        ids = attempt_external_ids(group_id=group_db_id)
        rows = [verdict_row(r, head, ids) for r in runs]
        return Response(_listing(head, VerdictSerializer(rows, many=True).data))
