"""The training-loop API: submit groups for grading, fetch their advantages (`gagar.v2` rows)."""

from __future__ import annotations

from typing import Any

from drf_spectacular.extensions import OpenApiAuthenticationExtension
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers, status
from rest_framework.exceptions import NotFound, ValidationError
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from grading.advantages import DEFAULT_COEFFICIENTS
from grading.api.problems import IDEMPOTENCY_CONFLICT, problem_response
from grading.api.schemas import AdvantagesOutputSerializer, ProblemItemSerializer
from grading.api.schemas import problem_responses as errors
from grading.api.views import (
    BUNDLE_PARSERS,
    BUNDLE_REQUEST,
    as_jsonl,
    empty_body_problem,
    import_problem,
)
from grading.models import GraderConfig, Group, Step
from grading.selectors_training import grader_config_by_name, step_group_ids
from grading.services.advantages import AdvantageParams
from grading.services.grader_runs import grader_config_default
from grading.services.training import (
    MAX_DEADLINE_S,
    advantages_fetch,
    fetched_payload,
    groups_submit,
    idempotent_response_find,
    idempotent_response_store,
    request_hash,
)


class BearerTokenScheme(OpenApiAuthenticationExtension):
    """Documents `Authorization: Bearer <token>` in the schema (registered on import)."""

    target_class = "grading.api.auth.HashedTokenAuthentication"
    name = "bearerAuth"

    def get_security_definition(self, auto_schema: Any) -> dict[str, str]:
        return {"type": "http", "scheme": "bearer"}


def config_named(name: str | None) -> GraderConfig:
    if not name:
        return grader_config_default()
    try:
        return grader_config_by_name(name=name)
    except GraderConfig.DoesNotExist as exc:
        raise ValidationError({"config": f"unknown grader configuration {name!r}"}) from exc


class SubmittedGroupSerializer(serializers.Serializer):
    id = serializers.IntegerField(help_text="Use it to fetch the group's advantages.")
    group_id = serializers.CharField(allow_null=True, help_text="The bundle's group_id.")
    run = serializers.CharField()
    step = serializers.IntegerField()
    task = serializers.CharField()
    outcome = serializers.ChoiceField(choices=["created", "unchanged", "replaced"])
    grader_run_id = serializers.IntegerField(allow_null=True)
    grading_status = serializers.CharField(allow_null=True)


class SubmitQuery(serializers.Serializer):
    config = serializers.CharField(required=False, help_text="grader configuration name")
    # A declared field (DRF moves it off the class), not BaseSerializer.partial.
    partial = serializers.BooleanField(  # type: ignore[assignment]
        required=False, default=False, help_text="import the valid groups, report the rest"
    )


class GroupsSubmitApi(APIView):
    parser_classes = BUNDLE_PARSERS
    required_scopes = ("submit",)

    class SubmitOutputSerializer(serializers.Serializer):
        summary = serializers.CharField()
        grader_config = serializers.CharField()
        groups = SubmittedGroupSerializer(many=True)
        problems = ProblemItemSerializer(many=True)

    @extend_schema(
        operation_id="training_groups_submit",
        summary="Submit groups for grading (gagar.group.v1)",
        description="One group or a whole step: JSON Lines, a JSON array or one object. The groups "
        "are imported (identical content is a no-op) and grading is enqueued with the default or "
        "the named configuration. A retry never duplicates a group; with an Idempotency-Key the "
        "first response is replayed (header Idempotent-Replayed: true).",
        parameters=[
            SubmitQuery,
            OpenApiParameter(
                "Idempotency-Key",
                str,
                location=OpenApiParameter.HEADER,
                required=False,
                description="any string up to 255 characters; a retry with the same key and "
                "body replays the first answer, another body is a 422",
            ),
        ],
        request=BUNDLE_REQUEST,
        responses={
            201: SubmitOutputSerializer,
            200: SubmitOutputSerializer,
            **errors(400, 422),
        },
    )
    def post(self, request: Request) -> Response:
        query = SubmitQuery(data=request.query_params)
        query.is_valid(raise_exception=True)
        body = as_jsonl(request.data if isinstance(request.data, bytes) else b"")
        partial = bool(query.validated_data["partial"])
        config = config_named(query.validated_data.get("config"))
        key = request.headers.get("Idempotency-Key", "")[:255]
        fingerprint = request_hash(body, config.name.encode(), str(partial).encode())
        if key:
            try:
                found = idempotent_response_find(
                    user_id=int(request.user.pk or 0), key=key, request_hash=fingerprint
                )
            except ValueError as exc:
                return problem_response(
                    status_code=422, type_=IDEMPOTENCY_CONFLICT, detail=str(exc)
                )
            if found is not None:
                return Response(
                    found.response,
                    status=found.status_code,
                    headers={"Idempotent-Replayed": "true"},
                )
        if not body.strip():
            return empty_body_problem()
        submission = groups_submit(body=body, config=config, partial=partial)
        if submission.error is not None:
            return import_problem(submission.error.report, grader_config=config.name)
        report = submission.report
        assert report is not None
        if report.problems and not report.results:
            return import_problem(report, grader_config=config.name)
        payload = self._output(submission, config)
        code: int = status.HTTP_201_CREATED if report.count("created") else status.HTTP_200_OK
        if key:
            idempotent_response_store(
                user_id=int(request.user.pk or 0),
                key=key,
                request_hash=fingerprint,
                status_code=code,
                response=payload,
            )
        return Response(payload, status=code)

    def _output(self, submission: Any, config: GraderConfig) -> dict[str, Any]:
        report = submission.report
        runs = {run.group_id: run for run in submission.runs}
        groups = [
            SubmittedGroupSerializer(
                {
                    "id": r.group_id,
                    "group_id": r.external_id,
                    "run": r.run,
                    "step": r.step,
                    "task": r.task,
                    "outcome": r.outcome,
                    "grader_run_id": runs[r.group_id].pk if r.group_id in runs else None,
                    "grading_status": runs[r.group_id].status if r.group_id in runs else None,
                }
            ).data
            for r in report.results
        ]
        return {
            "summary": report.summary(),
            "grader_config": config.name,
            "groups": groups,
            "problems": [vars(p) for p in report.problems],
        }


class AdvantagesQuery(serializers.Serializer):
    config = serializers.CharField(
        required=False, help_text="grader configuration name (default: the server's default)"
    )
    deadline = serializers.FloatField(
        required=False,
        min_value=0,
        max_value=MAX_DEADLINE_S,
        help_text="Wait up to this many seconds for grading; groups not graded by then come back "
        "as fallback (plain GRPO, reason 'deadline'). Without it, they come back 'pending'.",
    )
    lambda_max = serializers.CharField(
        required=False, help_text="λ_max (≥ 1), or 'none' for uncapped; default 1.5"
    )
    normalize_std = serializers.BooleanField(
        required=False, default=False, help_text="divide A and A′ by σ(r) + std_eps"
    )
    std_ddof = serializers.ChoiceField(
        choices=[0, 1],
        required=False,
        default=0,
        help_text="σ's ddof with normalize_std: 0 = NumPy (population), 1 = PyTorch .std()",
    )
    std_eps = serializers.FloatField(
        required=False, default=1e-6, min_value=0, help_text="ε with normalize_std"
    )

    def params(self) -> AdvantageParams:
        data = self.validated_data
        raw = data.get("lambda_max")
        try:
            lam = None if raw in ("none", "None", "null") else float(raw or 1.5)
            return AdvantageParams(
                lambda_max=lam,
                coefficients=DEFAULT_COEFFICIENTS,
                normalize_std=data["normalize_std"],
                std_ddof=int(data["std_ddof"]),
                std_eps=data["std_eps"],
            )
        except ValueError as exc:
            raise ValidationError({"lambda_max": str(exc)}) from exc


def _respond(request: Request, group_ids: list[int], scope: dict[str, Any]) -> Response:
    query = AdvantagesQuery(data=request.query_params)
    query.is_valid(raise_exception=True)
    params = query.params()
    config = config_named(query.validated_data.get("config"))
    fetched = advantages_fetch(
        group_ids=group_ids,
        config=config,
        params=params,
        deadline_s=query.validated_data.get("deadline"),
    )
    # The rows are already the gagar.v2 shape the output serializer documents; running 2,000
    # attempt rows through DRF fields again would cost more than the rest of the request.
    return Response(fetched_payload(fetched=fetched, config=config, params=params, scope=scope))


# Advantages are the training loop's return path (submit) and a read (read).
ADVANTAGE_SCOPES = ("submit", "read")


class StepAdvantagesApi(APIView):
    required_scopes = ADVANTAGE_SCOPES

    @extend_schema(
        operation_id="training_step_advantages",
        summary="Advantages of a step",
        parameters=[AdvantagesQuery],
        responses={200: AdvantagesOutputSerializer, **errors(400, 404)},
    )
    def get(self, request: Request, run: str, step: int) -> Response:
        try:
            ids = step_group_ids(run_name=run, step_number=step)
        except Step.DoesNotExist as exc:
            raise NotFound(f"no step {step} in run {run!r}") from exc
        return _respond(request, ids, {"run": run, "step": step})


class GroupAdvantagesApi(APIView):
    required_scopes = ADVANTAGE_SCOPES

    @extend_schema(
        operation_id="training_group_advantages",
        summary="Advantages of one group",
        parameters=[AdvantagesQuery],
        responses={200: AdvantagesOutputSerializer, **errors(400, 404)},
    )
    def get(self, request: Request, group_id: int) -> Response:
        if not Group.objects.filter(pk=group_id).exists():
            raise NotFound(f"no group {group_id}")
        return _respond(request, [group_id], {"group_id": group_id})
