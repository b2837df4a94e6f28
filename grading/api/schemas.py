"""What the API's answers look like, for the OpenAPI schema: problem details, bundle groups and
the `gagar.v2` advantage rows with every column (nullable ones marked).

The advantage rows are built by the selectors (grading/selectors/training.py) and sent as they
are; their serializers are derived from the one column list (grading/domain/advantage_columns.py)
and `test_the_schema_declares_every_row_field` holds them to the real rows.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import pyarrow as pa
from drf_spectacular.utils import OpenApiResponse
from rest_framework import serializers

from grading.api.problems import CONTENT_TYPE
from grading.domain.advantage_columns import ATTEMPT_SCHEMA, GROUP_SCHEMA, SCHEMA_VERSION
from grading.domain.contracts import field_choices, field_doc


class ProblemItemSerializer(serializers.Serializer):
    source = serializers.CharField(  # type: ignore[assignment]  # a field, not Field.source
        required=False, help_text="'request' for a request body."
    )
    line = serializers.IntegerField(
        allow_null=True, help_text="Bundle line (JSON Lines body), when there is one."
    )
    index = serializers.IntegerField(
        required=False,
        help_text="The group's index (0-based) in a JSON-array body; line is null then.",
    )
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


def _field(f: pa.Field, owner: str) -> serializers.Field:
    kw: dict[str, Any] = {"allow_null": f.nullable}
    if doc := field_doc(f):
        kw["help_text"] = doc
    t = f.type
    if choices := field_choices(f):
        return serializers.ChoiceField(choices=choices, allow_blank="" in choices, **kw)
    if pa.types.is_struct(t):
        fields = [t.field(i) for i in range(t.num_fields)]
        return arrow_serializer(owner + _camel(f.name), fields)(**kw)
    if pa.types.is_list(t):
        item = t.value_field
        if pa.types.is_struct(item.type):
            fields = [item.type.field(i) for i in range(item.type.num_fields)]
            return arrow_serializer(owner + _camel(f.name), fields)(many=True, **kw)
        return serializers.ListField(child=_field(item, owner), **kw)
    if pa.types.is_integer(t):
        return serializers.IntegerField(**kw)
    if pa.types.is_floating(t):
        return serializers.FloatField(**kw)
    if pa.types.is_boolean(t):
        return serializers.BooleanField(**kw)
    return serializers.CharField(allow_blank=True, **kw)


def _camel(name: str) -> str:
    return "".join(part.capitalize() for part in name.split("_"))


def arrow_serializer(
    name: str, fields: Iterable[pa.Field], extra: dict[str, serializers.Field] | None = None
) -> type[serializers.Serializer]:
    """A serializer declaring every field of an export table (grading/domain/contracts.py), so
    the OpenAPI schema and the export files are one contract; `extra` fields follow."""
    declared: dict[str, Any] = {f.name: _field(f, name) for f in fields}
    declared.update(extra or {})
    return type(f"{name}Serializer", (serializers.Serializer,), declared)


AdvantageAttemptRowSerializer = arrow_serializer("AdvantageAttemptRow", ATTEMPT_SCHEMA)
AdvantageGroupRowSerializer = arrow_serializer(
    "AdvantageGroupRow",
    GROUP_SCHEMA,
    {
        "status": serializers.ChoiceField(choices=["graded", "pending", "fallback", "failed"]),
        "attempts": AdvantageAttemptRowSerializer(
            many=True, allow_null=True, help_text="null while pending"
        ),
    },
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
    schema = serializers.CharField(help_text=SCHEMA_VERSION)
    run = serializers.CharField(required=False)
    step = serializers.IntegerField(required=False)
    group_id = serializers.CharField(
        required=False, help_text="One group's advantages: its external id (the join key)."
    )
    group_db_id = serializers.IntegerField(required=False, help_text="…and its database id.")
    grader_config = serializers.CharField()
    grader_approval = serializers.JSONField(
        help_text="Whether grader_config is approved for training: config, approved, reason, "
        "basis, fit_version, decided_at."
    )
    params = AdvantageParamsSerializer()
    complete = serializers.BooleanField(help_text="No group is pending.")
    counts = AdvantageCountsSerializer()
    waited_seconds = serializers.FloatField()
    groups = AdvantageGroupRowSerializer(many=True)
