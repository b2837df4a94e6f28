"""The served OpenAPI schema says everything a generated client needs: both bundle bodies,
every query parameter, every row field with nullable ones marked, every error response."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client

from grading.models import GraderRun, Group
from grading.selectors.training import ATTEMPT_COLUMNS, GROUP_COLUMNS
from grading.services.imports import OUTCOMES
from tests.importers.helpers import jsonl
from tests.training.builders import config, grade, import_groups, step_group

pytestmark = pytest.mark.django_db
SUBMIT = "/api/v1/training/groups"


@pytest.fixture
def schema() -> dict[str, Any]:
    response = Client().get("/api/v1/schema?format=json")
    assert response.status_code == 200
    return response.json()


def _resolve(schema: dict[str, Any], node: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in node:
        node = schema["components"]["schemas"][node["$ref"].rsplit("/", 1)[1]]
    if "allOf" in node:
        merged: dict[str, Any] = {"properties": {}, "required": []}
        for part in node["allOf"]:
            part = _resolve(schema, part)
            merged["properties"].update(part.get("properties", {}))
            merged["required"] += part.get("required", [])
        return merged
    return node


def _nullable(prop: dict[str, Any]) -> bool:
    return bool(prop.get("nullable")) or any(p.get("nullable") for p in prop.get("oneOf", []))


def test_both_bundle_endpoints_declare_json_and_ndjson(schema):
    for path in ("/api/v1/bundles", SUBMIT):
        content = schema["paths"][path]["post"]["requestBody"]["content"]
        assert set(content) == {"application/json", "application/x-ndjson"}
        array = content["application/json"]["schema"]
        assert array["type"] == "array"
        item = _resolve(schema, array["items"])
        assert {"schema", "run", "step", "attempts"} <= set(item["required"])


def test_every_query_parameter_is_declared(schema):
    def names(path: str) -> set[str]:
        return {p["name"] for p in schema["paths"][path]["get"].get("parameters", [])}

    advantages = {"config", "deadline", "lambda_max", "normalize_std", "std_ddof", "std_eps"}
    assert advantages <= names("/api/v1/training/runs/{run}/steps/{step}/advantages")
    assert advantages <= names("/api/v1/training/groups/{group_db_id}/advantages")
    assert {"run", "step", "repo", "campaign", "config", "page", "page_size"} <= names(
        "/api/v1/labels"
    )
    assert {"page", "page_size"} <= names("/api/v1/runs")
    assert {"run", "step", "format", "config", "lambda_max"} <= names("/api/v1/exports/advantages")
    assert {"run", "step", "format"} <= names("/api/v1/exports/package")
    submit = {p["name"] for p in schema["paths"][SUBMIT]["post"]["parameters"]}
    assert {"config", "partial", "Idempotency-Key"} <= submit


def test_every_operation_declares_its_error_responses(schema):
    for path, ops in schema["paths"].items():
        if path in ("/api/v1/schema", "/api/v1/docs"):
            continue
        for method, op in ops.items():
            for code in ("401", "403", "429"):
                assert code in op["responses"], (method, path, code)
                assert "application/problem+json" in op["responses"][code]["content"]


def test_the_schema_declares_every_row_field_and_marks_nullable_ones(schema, api_for):
    client = api_for("submit", "read")
    client.post(SUBMIT, jsonl(step_group("t-1")), content_type="application/x-ndjson")
    url = "/api/v1/training/runs/run-1/steps/0/advantages"
    pending = client.get(url).json()
    assert pending["groups"][0]["attempts"] is None
    body = client.get(url + "?deadline=0").json()

    grade(Group.objects.get(), config(), {"p1": (1, 1), "p2": (3, 1), "p3": (3, 1), "p4": (2, 1)})
    graded = client.get("/api/v1/training/runs/run-1/steps/0/advantages?config=test-config")
    out = _resolve(
        schema,
        schema["paths"]["/api/v1/training/runs/{run}/steps/{step}/advantages"]["get"]["responses"][
            "200"
        ]["content"]["application/json"]["schema"],
    )
    group_schema = _resolve(schema, out["properties"]["groups"]["items"])
    attempt_schema = _resolve(schema, group_schema["properties"]["attempts"]["items"])
    assert set(attempt_schema["properties"]) == set(ATTEMPT_COLUMNS)
    assert len(ATTEMPT_COLUMNS) == 37
    assert set(group_schema["properties"]) == set(GROUP_COLUMNS) | {"status", "attempts"}
    for payload in (pending, body, graded.json()):
        for g in payload["groups"]:
            for key, value in g.items():
                assert key in group_schema["properties"], key
                if value is None:
                    assert _nullable(group_schema["properties"][key]), key
            for row in g["attempts"] or []:
                assert set(row) == set(ATTEMPT_COLUMNS)
                for key, value in row.items():
                    if value is None:
                        assert _nullable(attempt_schema["properties"][key]), key


def test_the_interactive_docs_are_served_with_local_assets(client):
    page = client.get("/api/v1/docs")
    assert page.status_code == 200
    html = page.content.decode()
    assert "swagger-ui" in html and "http://" not in html and "https://" not in html
    assert "/static/drf_spectacular_sidecar/swagger-ui-dist/" in html


def _operation_schema(schema: dict[str, Any], path: str) -> dict[str, Any]:
    node = schema["paths"][path]["get"]["responses"]["200"]["content"]["application/json"]
    return _resolve(schema, node["schema"])


def _declared(schema: dict[str, Any], node: dict[str, Any], value: Any, where: str) -> None:
    """`value` has exactly the declared properties, nulls only where nullable (recursively)."""
    node = _resolve(schema, node)
    if isinstance(value, dict) and "properties" in node:
        assert set(value) == set(node["properties"]), where
        for key, v in value.items():
            prop = node["properties"][key]
            if v is None:
                assert _nullable(prop), f"{where}.{key}"
            elif "items" in prop and isinstance(v, list):
                for item in v:
                    _declared(schema, prop["items"], item, f"{where}.{key}[]")
            elif "$ref" in prop or "allOf" in prop:
                _declared(schema, prop, v, f"{where}.{key}")


def test_grader_run_and_verdict_rows_are_declared_field_for_field(schema, full):
    (group,) = import_groups(step_group("t-1"))
    grade(group, config(), {"p1": (1, 1), "p2": (3, 1), "p3": (3, 1), "p4": (2, 1)})
    GraderRun.objects.create(group=group, config=config("other"), status="pending")
    for path in ("grader-runs", "verdicts"):
        body = full.get(f"/api/v1/groups/{group.pk}/{path}").json()
        assert body["count"] >= 1
        _declared(schema, _operation_schema(schema, f"/api/v1/groups/{{group_db_id}}/{path}"),
                  body, path)  # fmt: skip


def _walk(value: Any, where: str = "") -> list[str]:
    """Where an answer breaks the gagar.v2 encoding: an id that is not a string (database ids
    are `*_db_id` integers), a tier that is not 1–3 or null."""
    bad: list[str] = []
    if isinstance(value, list):
        for i, item in enumerate(value):
            bad += _walk(item, f"{where}[{i}]")
    if not isinstance(value, dict):
        return bad
    for key, v in value.items():
        here = f"{where}.{key}"
        if key.endswith("_db_id"):
            if not isinstance(v, int):
                bad.append(here)
        elif (key == "id" or key.endswith("_id")) and v is not None and not isinstance(v, str):
            bad.append(here)
        elif (
            (key == "tier" or key.endswith("_tier"))
            and key != "rank_in_tier"
            and v is not None
            and (isinstance(v, bool) or v not in (1, 2, 3))
        ):
            bad.append(f"{here}={v!r}")
        if key != "verdict":  # the verdict document: the grader's own protocol (gagar.verdict.v1)
            bad += _walk(v, here)
    return bad


def test_every_json_answer_has_string_ids_and_one_tier_encoding(full):
    submitted = full.post(SUBMIT, jsonl(step_group("t-1"), step_group("t-2")),
                          content_type="application/x-ndjson")  # fmt: skip
    imported = full.post("/api/v1/bundles", jsonl(step_group("t-3")),
                         content_type="application/x-ndjson")  # fmt: skip
    groups = list(Group.objects.order_by("pk"))
    for g in groups:
        grade(g, config(), {"p1": (1, 1), "p2": (3, 1), "p3": (3, 1), "p4": (2, 1)})
    g, cfg = groups[0], "?config=test-config"
    answers = {
        "submit": submitted,
        "bundles": imported,
        "step advantages": full.get(f"/api/v1/training/runs/run-1/steps/0/advantages{cfg}"),
        "group advantages": full.get(f"/api/v1/training/groups/{g.pk}/advantages{cfg}"),
        "runs": full.get("/api/v1/runs"),
        "steps": full.get("/api/v1/runs/run-1/steps"),
        "grader runs": full.get(f"/api/v1/groups/{g.pk}/grader-runs"),
        "verdicts": full.get(f"/api/v1/groups/{g.pk}/verdicts"),
        "labels": full.get("/api/v1/labels?run=run-1"),
    }  # fmt: skip
    for name, response in answers.items():
        assert response.status_code in (200, 201), (name, response.content[:300])
        assert _walk(response.json()) == [], name
    one = answers["group advantages"].json()
    assert (one["group_id"], one["group_db_id"]) == ("run-1/0/t-1", g.pk)


def test_both_import_endpoints_declare_every_outcome(schema):
    for path in ("/api/v1/bundles", SUBMIT):
        answer = schema["paths"][path]["post"]["responses"]["200"]["content"]["application/json"]
        groups = _resolve(schema, answer["schema"])["properties"]["groups"]
        outcome = _resolve(schema, groups["items"])["properties"]["outcome"]
        assert _resolve(schema, outcome["allOf"][0])["enum"] == list(OUTCOMES)
    assert "completed" in OUTCOMES  # what a client must expect besides created/unchanged
