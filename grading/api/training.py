"""The training-loop API: submit groups for grading, fetch their advantages (`gagar.v1` rows)."""

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
from grading.api.views import RawBundleParser, _as_jsonl
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


def _config(name: str | None) -> GraderConfig:
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


class GroupsSubmitApi(APIView):
    parser_classes = [RawBundleParser]

    class SubmitOutputSerializer(serializers.Serializer):
        summary = serializers.CharField()
        grader_config = serializers.CharField()
        groups = SubmittedGroupSerializer(many=True)
        problems = serializers.ListField(child=serializers.DictField())

    @extend_schema(
        summary="Submit groups for grading (gagar.group.v1)",
        description="One group or a whole step: JSON Lines, a JSON array or one object. The groups "
        "are imported (identical content is a no-op) and grading is enqueued with the default or "
        "the named configuration. A retry never duplicates a group; with an Idempotency-Key the "
        "first response is replayed.",
        parameters=[
            OpenApiParameter("config", str, description="grader configuration name"),
            OpenApiParameter("partial", bool, description="import valid groups, report the rest"),
            OpenApiParameter(
                "Idempotency-Key", str, location=OpenApiParameter.HEADER, required=False
            ),
        ],
        request={"application/x-ndjson": bytes},
        responses={
            201: SubmitOutputSerializer,
            200: SubmitOutputSerializer,
            400: SubmitOutputSerializer,
        },
    )
    def post(self, request: Request) -> Response:
        body = _as_jsonl(request.data if isinstance(request.data, bytes) else b"")
        partial = request.query_params.get("partial") in ("1", "true")
        config = _config(request.query_params.get("config"))
        key = request.headers.get("Idempotency-Key", "")[:255]
        fingerprint = request_hash(body, config.name.encode(), str(partial).encode())
        if key:
            try:
                found = idempotent_response_find(
                    user_id=int(request.user.pk or 0), key=key, request_hash=fingerprint
                )
            except ValueError as exc:
                return Response({"detail": str(exc)}, status=422)
            if found is not None:
                return Response(
                    found.response,
                    status=found.status_code,
                    headers={"Idempotent-Replayed": "true"},
                )
        if not body.strip():
            raise ValidationError({"body": "the body holds no groups"})
        submission = groups_submit(body=body, config=config, partial=partial)
        payload, code = self._output(submission, config)
        if key and code < 400:
            idempotent_response_store(
                user_id=int(request.user.pk or 0),
                key=key,
                request_hash=fingerprint,
                status_code=code,
                response=payload,
            )
        return Response(payload, status=code)

    def _output(self, submission: Any, config: GraderConfig) -> tuple[dict[str, Any], int]:
        if submission.error is not None:
            report = submission.error.report
            return {
                "summary": report.summary(),
                "grader_config": config.name,
                "groups": [],
                "problems": [vars(p) for p in report.problems],
            }, status.HTTP_400_BAD_REQUEST
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
        code: int = status.HTTP_201_CREATED if report.count("created") else status.HTTP_200_OK
        if report.problems and not report.results:
            code = status.HTTP_400_BAD_REQUEST
        return {
            "summary": report.summary(),
            "grader_config": config.name,
            "groups": groups,
            "problems": [vars(p) for p in report.problems],
        }, code


class _AdvantagesQuery(serializers.Serializer):
    config = serializers.CharField(required=False, help_text="grader configuration name")
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
    normalize_std = serializers.BooleanField(required=False, default=False)
    std_ddof = serializers.ChoiceField(choices=[0, 1], required=False, default=0)
    std_eps = serializers.FloatField(required=False, default=1e-6)

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
            raise ValidationError({"params": str(exc)}) from exc


class AdvantageAttemptRowSerializer(serializers.Serializer):
    attempt_id = serializers.IntegerField()
    attempt_external_id = serializers.CharField()
    attempt_index = serializers.IntegerField()
    status = serializers.CharField()
    included = serializers.BooleanField()
    test_reward = serializers.FloatField()
    reward_used = serializers.FloatField(allow_null=True)
    tier = serializers.IntegerField(allow_null=True)
    rank_in_tier = serializers.IntegerField(allow_null=True)
    coefficient = serializers.FloatField()
    adv_grpo = serializers.FloatField()
    adv_gagar = serializers.FloatField(help_text="A' — the advantage to train on")
    reward_equivalent = serializers.FloatField(allow_null=True, help_text="r' = R̄ + A'")


class AdvantageGroupRowSerializer(serializers.Serializer):
    status = serializers.ChoiceField(choices=["graded", "pending", "fallback", "failed"])
    run = serializers.CharField()
    step = serializers.IntegerField()
    task_id = serializers.CharField()
    group_id = serializers.IntegerField()
    group_external_id = serializers.CharField(allow_null=True)
    grader_config = serializers.CharField()
    verdict_id = serializers.IntegerField(allow_null=True)
    fallback = serializers.BooleanField()
    fallback_reason = serializers.CharField(allow_blank=True)
    n_valid = serializers.IntegerField()
    mean_reward = serializers.FloatField(allow_null=True)
    lambda_raw = serializers.FloatField(allow_null=True)
    lambda_applied = serializers.FloatField(allow_null=True)
    capped = serializers.BooleanField()
    mean_shift = serializers.FloatField()
    positive_total_before = serializers.FloatField()
    positive_total_after = serializers.FloatField()
    attempts = AdvantageAttemptRowSerializer(many=True, allow_null=True)


class AdvantagesOutputSerializer(serializers.Serializer):
    schema = serializers.CharField()
    grader_config = serializers.CharField()
    params = serializers.DictField()
    complete = serializers.BooleanField(help_text="No group is pending.")
    counts = serializers.DictField(child=serializers.IntegerField())
    waited_seconds = serializers.FloatField()
    groups = AdvantageGroupRowSerializer(many=True)


_PARAMS = [
    OpenApiParameter("config", str),
    OpenApiParameter("deadline", float),
    OpenApiParameter("lambda_max", str),
    OpenApiParameter("normalize_std", bool),
]


def _respond(request: Request, group_ids: list[int], scope: dict[str, Any]) -> Response:
    query = _AdvantagesQuery(data=request.query_params)
    query.is_valid(raise_exception=True)
    params = query.params()
    config = _config(query.validated_data.get("config"))
    fetched = advantages_fetch(
        group_ids=group_ids,
        config=config,
        params=params,
        deadline_s=query.validated_data.get("deadline"),
    )
    # The rows are already the gagar.v1 shape the output serializer documents; running 2,000
    # attempt rows through DRF fields again would cost more than the rest of the request.
    return Response(fetched_payload(fetched=fetched, config=config, params=params, scope=scope))


class StepAdvantagesApi(APIView):
    @extend_schema(
        summary="Advantages of a step",
        parameters=_PARAMS,
        responses={200: AdvantagesOutputSerializer},
    )
    def get(self, request: Request, run: str, step: int) -> Response:
        try:
            ids = step_group_ids(run_name=run, step_number=step)
        except Step.DoesNotExist as exc:
            raise NotFound(f"no step {step} in run {run!r}") from exc
        return _respond(request, ids, {"run": run, "step": step})


class GroupAdvantagesApi(APIView):
    @extend_schema(
        summary="Advantages of one group",
        parameters=_PARAMS,
        responses={200: AdvantagesOutputSerializer},
    )
    def get(self, request: Request, group_id: int) -> Response:
        if not Group.objects.filter(pk=group_id).exists():
            raise NotFound(f"no group {group_id}")
        return _respond(request, [group_id], {"group_id": group_id})
