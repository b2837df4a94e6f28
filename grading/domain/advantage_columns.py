"""The `gagar.v2` advantage columns, once: the rows the training API returns and the advantages
export writes, their order, types, nullability and meaning. The selectors build rows with
these keys, the export writes them with this schema, the OpenAPI schema and the JSON Schema
files are derived from them (docs/formats/README.md says what changed since `gagar.v1`)."""

from __future__ import annotations

import pyarrow as pa

from grading.domain.contracts import Column, schema_of

SCHEMA_VERSION = "gagar.v2"
ATTEMPT_STATUSES = ("valid", "infra_failed", "exploit_confirmed")
FALLBACK_REASONS = ("", "pending", "deadline", "failed", "never_requested", "invalid_verdict")

# The keys that lead every attempt row (then the attempt's own columns, then the group's rest).
KEY_COLUMNS = (
    Column("run", "str", doc="The run's name."),
    Column("step", "int", doc="The training step."),
    Column("task_id", "str", doc="The task's external id."),
    Column(
        "group_id",
        "str",
        doc="The group's external id (the bundle's group_id; `<run>/<step>/<task_id>` for a "
        "group imported without one). The join key.",
    ),
    Column("group_db_id", "int", doc="The group's database id (extra; not a join key)."),
)
GROUP_REST_COLUMNS = (
    Column("grader_config", "str", doc="The grader configuration the advantages are for."),
    Column(
        "verdict_id",
        "str",
        nullable=True,
        doc="The grader run whose verdict was used; null on fallback.",
    ),
    Column("grader_model", "str", doc="The configuration's model (or backend)."),
    Column("prompt_version", "str", doc="The prompt the grader run really used."),
    Column("lambda_max", "float", nullable=True, doc="The λ cap; null = uncapped."),
    Column("normalize_std", "bool", doc="Advantages divided by the group's reward std."),
    Column("fallback", "bool", doc="No usable verdict: plain GRPO advantages."),
    Column(
        "fallback_reason",
        "str",
        doc="'' when graded; else why the group fell back.",
        choices=FALLBACK_REASONS,
    ),
    Column("n_attempts", "int", doc="Attempts in the group."),
    Column("n_valid", "int", doc="Attempts that count (not infra failures)."),
    Column("mean_reward", "float", nullable=True, doc="R̄ over valid attempts."),
    Column("reward_std", "float", nullable=True, doc="The reward std; only with normalize_std."),
    Column("lambda_raw", "float", nullable=True, doc="λ before the cap."),
    Column("lambda_applied", "float", nullable=True, doc="λ after the cap."),
    Column("capped", "bool", doc="λ_max bound."),
    Column("mean_shift", "float", doc="The re-centring shift."),
    Column("positive_total_before", "float", doc="Σ of positive A before redistribution."),
    Column("positive_total_after", "float", doc="Σ of positive A′ after redistribution."),
)
GROUP_FIELD_COLUMNS = KEY_COLUMNS + GROUP_REST_COLUMNS
ATTEMPT_OWN_FIELD_COLUMNS = (
    Column(
        "attempt_id",
        "str",
        doc="The bundle's attempt id: unique within its group only; (group_id, attempt_id) "
        "is the key.",
    ),
    Column("attempt_db_id", "int", doc="The attempt's database id (extra; not a join key)."),
    Column("attempt_index", "int", doc="Position of the attempt in its group."),
    Column("status", "str", doc="The attempt's status.", choices=ATTEMPT_STATUSES),
    Column("included", "bool", doc="false for infra failures (advantage 0)."),
    Column("test_reward", "float", doc="The test reward r."),
    Column("reward_used", "float", nullable=True, doc="exploit → 0; infra → null."),
    Column("tier", "int", nullable=True, doc="The grader's tier 1–3 (passing attempts only)."),
    Column("exploit", "bool", doc="A confirmed exploit / test tampering (status)."),
    Column("rank_in_tier", "int", nullable=True, doc="Rank within the tier."),
    Column("coefficient", "float", doc="The tier coefficient."),
    Column("adv_grpo", "float", doc="A = r − R̄."),
    Column("adv_gagar", "float", doc="A′ — the advantage to train on."),
    Column("reward_equivalent", "float", nullable=True, doc="r′ = R̄ + A′ (null if excluded)."),
)
ATTEMPT_FIELD_COLUMNS = KEY_COLUMNS + ATTEMPT_OWN_FIELD_COLUMNS + GROUP_REST_COLUMNS
LAMBDA_CAP_FIELD_COLUMNS = (
    Column("run", "str", doc="The run's name."),
    Column("step", "int", doc="The training step."),
    Column("grader_config", "str", doc="The grader configuration."),
    Column("lambda_max", "float", nullable=True, doc="The λ cap; null = uncapped."),
    Column("groups", "int", doc="Groups with stored advantages."),
    Column("fallback_groups", "int", doc="Groups that fell back to GRPO."),
    Column("groups_with_lambda", "int", doc="Groups with a λ (a passer above the mean)."),
    Column("capped_groups", "int", doc="Groups where λ_max bound."),
    Column("capped_share", "float", nullable=True, doc="capped / with λ; null if none has one."),
    Column("mean_shift_capped", "float", nullable=True, doc="Mean shift where the cap bound."),
    Column("mean_lambda_raw", "float", nullable=True, doc="Mean λ before the cap."),
)

GROUP_COLUMNS = tuple(c.name for c in GROUP_FIELD_COLUMNS)
ATTEMPT_OWN_COLUMNS = tuple(c.name for c in ATTEMPT_OWN_FIELD_COLUMNS)
ATTEMPT_COLUMNS = tuple(c.name for c in ATTEMPT_FIELD_COLUMNS)
KEY_NAMES = tuple(c.name for c in KEY_COLUMNS)
LAMBDA_CAP_COLUMNS = tuple(c.name for c in LAMBDA_CAP_FIELD_COLUMNS)

ATTEMPT_SCHEMA: pa.Schema = schema_of(ATTEMPT_FIELD_COLUMNS)
GROUP_SCHEMA: pa.Schema = schema_of(GROUP_FIELD_COLUMNS)
LAMBDA_CAP_SCHEMA: pa.Schema = schema_of(LAMBDA_CAP_FIELD_COLUMNS)
