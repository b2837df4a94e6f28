"""The training-loop API: submit groups for grading, fetch their advantages (`gagar.v2` rows)."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from drf_spectacular.extensions import OpenApiAuthenticationExtension
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers, status
from rest_framework.exceptions import NotFound, ValidationError
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from grading.advantages import DEFAULT_COEFFICIENTS
from grading.api.bundles import (
    BUNDLE_PARSERS,
    BUNDLE_REQUEST,
    OUTCOME_HELP,
    as_jsonl,
    empty_body_problem,
    import_problem,
)
from grading.api.problems import GRADER_NOT_APPROVED, IDEMPOTENCY_CONFLICT, problem_response
from grading.api.schemas import AdvantagesOutputSerializer, ProblemItemSerializer
from grading.api.schemas import problem_responses as errors
from grading.models import GraderConfig, Group, Step
from grading.selectors.api import group_for_api, group_head
from grading.selectors.gate import ApprovalState, grader_approval_state, run_grader_config
from grading.selectors.training import group_key, step_group_ids
from grading.services.advantages import AdvantageParams
from grading.services.grader_runs import grader_config_for
from grading.services.imports import OUTCOMES
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
    try:
        return grader_config_for(name=name)
    except GraderConfig.DoesNotExist as exc:
        raise ValidationError({"config": f"unknown grader configuration {name!r}"}) from exc


def not_approved_problem(states: list[ApprovalState]) -> Response | None:
    """409 when approval is required (GAGAR_REQUIRE_APPROVED_GRADER) and a configuration that
    would grade is not approved for training; None otherwise."""
    refused = [s for s in states if not s.approved]
    if not settings.GAGAR_REQUIRE_APPROVED_GRADER or not refused:
        return None
    names = ", ".join(f"{s.config} ({s.reason})" for s in refused)
    return problem_response(
        status_code=status.HTTP_409_CONFLICT,
        type_=GRADER_NOT_APPROVED,
        title="Grader configuration not approved for training",
        detail=f"this server trains only on approved grader configurations; not approved: "
        f"{names}. Staff approve one with manage.py grader_eval --approve.",
        grader_approval=[s.as_json() for s in refused],
    )


def pinned_config(group_ids: list[int], name: str | None) -> GraderConfig:
    """The named configuration, else the one pinned to the groups' run, else the default."""
    if name:
        return config_named(name)
    pinned = run_grader_config(group_ids=group_ids)
    return pinned if pinned is not None else config_named(None)


class ApprovalSerializer(serializers.Serializer):
    config = serializers.CharField()
    approved = serializers.BooleanField()
    reason = serializers.CharField()
    basis = serializers.CharField(allow_blank=True)
    fit_version = serializers.CharField(allow_blank=True)
    decided_at = serializers.CharField(allow_null=True)


class SubmittedGroupSerializer(serializers.Serializer):
    group_id = serializers.CharField(
        help_text="The group's external id: the bundle's group_id, or `<run>/<step>/<task>` "
        "for a group sent without one. The join key of every row."
    )
    group_db_id = serializers.IntegerField(
        help_text="The group's database id (extra): /api/v1/training/groups/{group_db_id}/…"
    )
    run = serializers.CharField()
    step = serializers.IntegerField()
    task = serializers.CharField()
    outcome = serializers.ChoiceField(choices=OUTCOMES, help_text=OUTCOME_HELP)
    grader_run_id = serializers.CharField(allow_null=True)
    grading_status = serializers.CharField(allow_null=True)
    grader_config = serializers.CharField(
        allow_null=True, help_text="The configuration grading it (the run's pinned one)."
    )
    grader_approved = serializers.BooleanField(
        allow_null=True, help_text="Whether that configuration is approved for training."
    )


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
        grader_approval = ApprovalSerializer(many=True, help_text="Of every grading config.")
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
        explicit = bool(query.validated_data.get("config"))
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
        submission = groups_submit(
            body=body,
            config=config,
            partial=partial,
            explicit=explicit,
            requested_by=request.user.get_username(),
            require_approved=settings.GAGAR_REQUIRE_APPROVED_GRADER,
        )
        if submission.refused:
            refusal = not_approved_problem(submission.refused)
            assert refusal is not None
            return refusal
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
        used = {c.pk: c for c in submission.configs.values()} or {config.pk: config}
        states = {pk: grader_approval_state(config=c) for pk, c in used.items()}
        groups = [
            SubmittedGroupSerializer(
                {
                    "group_id": group_key(
                        external_id=r.external_id, run=r.run, step=r.step, task_id=r.task
                    ),
                    "group_db_id": r.group_id,
                    "run": r.run,
                    "step": r.step,
                    "task": r.task,
                    "outcome": r.outcome,
                    "grader_run_id": str(runs[r.group_id].pk) if r.group_id in runs else None,
                    "grading_status": runs[r.group_id].status if r.group_id in runs else None,
                    "grader_config": _name(submission.configs.get(r.group_id)),
                    "grader_approved": _approved(states, submission.configs.get(r.group_id)),
                }
            ).data
            for r in report.results
        ]
        return {
            "summary": report.summary(),
            "grader_config": config.name,
            "grader_approval": [s.as_json() for s in states.values()],
            "groups": groups,
            "problems": [vars(p) for p in report.problems],
        }


def _name(config: GraderConfig | None) -> str | None:
    return config.name if config is not None else None


def _approved(states: dict[int, ApprovalState], config: GraderConfig | None) -> bool | None:
    return states[config.pk].approved if config is not None and config.pk in states else None


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
    config = pinned_config(group_ids, query.validated_data.get("config"))
    approval = grader_approval_state(config=config)
    refusal = not_approved_problem([approval])
    if refusal is not None:
        return refusal
    fetched = advantages_fetch(
        group_ids=group_ids,
        config=config,
        params=params,
        deadline_s=query.validated_data.get("deadline"),
    )
    # The rows are already the gagar.v2 shape the output serializer documents; running 2,000
    # attempt rows through DRF fields again would cost more than the rest of the request.
    return Response(
        fetched_payload(
            fetched=fetched, config=config, params=params, scope=scope, approval=approval
        )
    )


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
    def get(self, request: Request, group_db_id: int) -> Response:
        try:
            head = group_head(group=group_for_api(group_db_id=group_db_id))
        except Group.DoesNotExist as exc:
            raise NotFound(f"no group {group_db_id}") from exc
        scope = {"group_id": head["group_id"], "group_db_id": group_db_id}
        return _respond(request, [group_db_id], scope)
