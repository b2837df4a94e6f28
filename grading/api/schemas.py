"""What the API's answers look like, for the OpenAPI schema: problem details, bundle groups and
the `gagar.v1` advantage rows with every column (nullable ones marked).

The advantage rows are built by the selectors (grading/selectors/training.py) and sent as they
are; `test_the_schema_declares_every_row_field` holds these serializers to the real rows.
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import OpenApiResponse
from rest_framework import serializers

from grading.api.problems import CONTENT_TYPE


class ProblemItemSerializer(serializers.Serializer):
    source = serializers.CharField(  # type: ignore[assignment]  # a field, not Field.source
        required=False, help_text="'request' for a request body."
    )
    line = serializers.IntegerField(allow_null=True, help_text="Bundle line, when there is one.")
    field = serializers.CharField(help_text="The field or parameter; empty for the whole body.")
    message = serializers.CharField()


class ProblemSerializer(serializers.Serializer):
    """RFC 9457 problem details, with the importer's `problems` as an extension."""

    type = serializers.CharField(help_text="about:blank, or urn:gagar:problem:<slug>")
    title = serializers.CharField()
    status = serializers.IntegerField()
    detail = serializers.CharField()
    instance = serializers.CharField(required=False, help_text="The request path.")
    problems = ProblemItemSerializer(many=True)
    retry_after = serializers.IntegerField(
        required=False, help_text="Seconds to wait (429 only; also the Retry-After header)."
    )


_ERROR_TEXT = {
    400: "Invalid parameters or body (problems lists each).",
    401: "No credentials, or an invalid or revoked token.",
    403: "A reviewer session, a token without the scope, or an account that may not hold one.",
    404: "No such run, step or group.",
    422: "The Idempotency-Key was used with a different request.",
    429: "Over the token's request rate; retry after Retry-After seconds.",
}


def problem_responses(*codes: int) -> dict[Any, Any]:
    """Error responses for `extend_schema(responses=…)`, as application/problem+json."""
    return {
        (code, CONTENT_TYPE): OpenApiResponse(ProblemSerializer, description=_ERROR_TEXT[code])
        for code in (401, 403, 429, *codes)
    }


class BundleGroupSerializer(serializers.Serializer):
    """One `gagar.group.v1` group; the full rules are docs/formats/gagar.group.v1.schema.json."""

    schema = serializers.ChoiceField(choices=["gagar.group.v1"])
    group_id = serializers.CharField(required=False, max_length=255)
    run = serializers.CharField(max_length=255)
    step = serializers.IntegerField(min_value=0)
    task_id = serializers.CharField(required=False, help_text="An existing task (or give task).")
    task = serializers.DictField(required=False, help_text="The task, inline.")
    metadata = serializers.DictField(required=False)
    attempts = serializers.ListField(child=serializers.DictField(), min_length=1)


class AdvantageGroupFieldsSerializer(serializers.Serializer):
    """The per-group `gagar.v1` columns (also in every attempt row)."""

    run = serializers.CharField()
    step = serializers.IntegerField()
    task_id = serializers.CharField(help_text="The task's external id.")
    group_id = serializers.IntegerField(help_text="The group's database id.")
    group_external_id = serializers.CharField(allow_null=True, help_text="The bundle's group_id.")
    grader_config = serializers.CharField()
    verdict_id = serializers.IntegerField(allow_null=True, help_text="The grader run used.")
    grader_model = serializers.CharField()
    prompt_version = serializers.CharField()
    lambda_max = serializers.FloatField(allow_null=True, help_text="null = uncapped")
    normalize_std = serializers.BooleanField()
    fallback = serializers.BooleanField(help_text="No usable verdict: plain GRPO.")
    fallback_reason = serializers.CharField(
        allow_blank=True,
        help_text="'' when graded; pending, deadline, failed, never_requested, invalid_verdict",
    )
    n_attempts = serializers.IntegerField()
    n_valid = serializers.IntegerField()
    mean_reward = serializers.FloatField(allow_null=True, help_text="R̄ over valid attempts")
    reward_std = serializers.FloatField(allow_null=True, help_text="only with normalize_std")
    lambda_raw = serializers.FloatField(allow_null=True)
    lambda_applied = serializers.FloatField(allow_null=True)
    capped = serializers.BooleanField()
    mean_shift = serializers.FloatField()
    positive_total_before = serializers.FloatField()
    positive_total_after = serializers.FloatField()


class AdvantageAttemptRowSerializer(AdvantageGroupFieldsSerializer):
    """One `gagar.v1` attempt row: the attempt's own values plus its group's columns."""

    attempt_id = serializers.IntegerField(help_text="The attempt's database id.")
    attempt_external_id = serializers.CharField(
        help_text="The bundle's attempt id: unique within its group only."
    )
    attempt_index = serializers.IntegerField()
    status = serializers.ChoiceField(choices=["valid", "infra_failed", "exploit_confirmed"])
    included = serializers.BooleanField(help_text="false for infra failures (advantage 0)")
    test_reward = serializers.FloatField()
    reward_used = serializers.FloatField(allow_null=True, help_text="exploit → 0; infra → null")
    tier = serializers.IntegerField(allow_null=True)
    rank_in_tier = serializers.IntegerField(allow_null=True)
    coefficient = serializers.FloatField()
    adv_grpo = serializers.FloatField(help_text="A = r − R̄")
    adv_gagar = serializers.FloatField(help_text="A′ — the advantage to train on")
    reward_equivalent = serializers.FloatField(allow_null=True, help_text="r′ = R̄ + A′")


class AdvantageGroupRowSerializer(AdvantageGroupFieldsSerializer):
    status = serializers.ChoiceField(choices=["graded", "pending", "fallback", "failed"])
    attempts = AdvantageAttemptRowSerializer(
        many=True, allow_null=True, help_text="null while pending"
    )


class AdvantageParamsSerializer(serializers.Serializer):
    lambda_max = serializers.FloatField(allow_null=True)
    coefficients = serializers.DictField(child=serializers.FloatField())
    normalize_std = serializers.BooleanField()
    std_ddof = serializers.IntegerField(required=False)
    std_eps = serializers.FloatField(required=False)


class AdvantageCountsSerializer(serializers.Serializer):
    graded = serializers.IntegerField()
    pending = serializers.IntegerField()
    fallback = serializers.IntegerField()
    failed = serializers.IntegerField()


class AdvantagesOutputSerializer(serializers.Serializer):
    schema = serializers.CharField(help_text="gagar.v1")
    run = serializers.CharField(required=False)
    step = serializers.IntegerField(required=False)
    group_id = serializers.IntegerField(required=False)
    grader_config = serializers.CharField()
    params = AdvantageParamsSerializer()
    complete = serializers.BooleanField(help_text="No group is pending.")
    counts = AdvantageCountsSerializer()
    waited_seconds = serializers.FloatField()
    groups = AdvantageGroupRowSerializer(many=True)
