"""One error format: every endpoint answers its errors as RFC 9457 problem details
(`application/problem+json`, type/title/status/detail, `problems` as the extension), and the
served schema declares each of those responses for that operation."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client

from tests.factories import UserFactory
from tests.importers.helpers import group, jsonl
from tests.training.builders import step_group

pytestmark = pytest.mark.django_db
BAD = group(task_id="t-2")
BAD["attempts"][0]["status"] = "great"
NDJSON = "application/x-ndjson"

# (name, method, path, body, status, problem type, a field that must be named in problems)
CASES: list[tuple[str, str, str, bytes | None, int, str, str | None]] = [
    ("bundle-invalid", "post", "/api/v1/bundles", jsonl(group(), BAD), 400,
     "urn:gagar:problem:invalid-bundle", "$.attempts[0].status"),
    ("bundle-empty", "post", "/api/v1/bundles", b"", 400, "urn:gagar:problem:invalid-bundle", ""),
    ("bundle-get", "get", "/api/v1/bundles", None, 405, "about:blank", None),
    ("submit-invalid", "post", "/api/v1/training/groups", jsonl(BAD), 400,
     "urn:gagar:problem:invalid-bundle", "$.attempts[0].status"),
    ("submit-config", "post", "/api/v1/training/groups?config=nope", jsonl(group()), 400,
     "urn:gagar:problem:invalid-parameters", "config"),
    ("step-unknown", "get", "/api/v1/training/runs/run-1/steps/9/advantages", None, 404,
     "about:blank", None),
    ("step-lambda", "get", "/api/v1/training/runs/run-1/steps/0/advantages?lambda_max=0.5", None,
     400, "urn:gagar:problem:invalid-parameters", "lambda_max"),
    ("step-ddof", "get", "/api/v1/training/runs/run-1/steps/0/advantages?std_ddof=2", None, 400,
     "urn:gagar:problem:invalid-parameters", "std_ddof"),
    ("group-unknown", "get", "/api/v1/training/groups/999999/advantages", None, 404,
     "about:blank", None),
    ("steps-unknown-run", "get", "/api/v1/runs/nope/steps", None, 404, "about:blank", None),
    ("runs-bad-page", "get", "/api/v1/runs?page=99", None, 404, "about:blank", None),
    ("grader-runs-unknown", "get", "/api/v1/groups/999999/grader-runs", None, 404, "about:blank",
     None),
    ("verdicts-unknown", "get", "/api/v1/groups/999999/verdicts", None, 404, "about:blank", None),
    ("labels-bad-step", "get", "/api/v1/labels?step=x", None, 400,
     "urn:gagar:problem:invalid-parameters", "step"),
    ("export-adv-no-run", "get", "/api/v1/exports/advantages?format=jsonl", None, 400,
     "urn:gagar:problem:invalid-parameters", "run"),
    ("export-adv-empty", "get", "/api/v1/exports/advantages?run=nope", None, 404, "about:blank",
     None),
    ("export-labels-format", "get", "/api/v1/exports/labels?format=xlsx", None, 400,
     "urn:gagar:problem:invalid-parameters", "format"),
    ("export-package-format", "get", "/api/v1/exports/package?format=xlsx", None, 400,
     "urn:gagar:problem:invalid-parameters", "format"),
    ("unknown-url", "get", "/api/v1/nothing-here", None, 404, "about:blank", None),
]  # fmt: skip


def assert_problem(response: Any, status: int, type_: str) -> dict[str, Any]:
    assert response.status_code == status, response.content
    assert response["Content-Type"].startswith("application/problem+json")
    body = response.json()
    assert body["status"] == status and body["type"] == type_
    assert body["title"] and body["detail"] and isinstance(body["problems"], list)
    return body


def _schema(client: Client) -> dict[str, Any]:
    return client.get("/api/v1/schema?format=json").json()


def _operation(schema: dict[str, Any], method: str, path: str) -> dict[str, Any] | None:
    bare = path.split("?")[0]
    for template, ops in schema["paths"].items():
        parts, want = template.split("/"), bare.split("/")
        if len(parts) == len(want) and all(
            p == w or p.startswith("{") for p, w in zip(parts, want, strict=True)
        ):
            return ops.get(method)
    return None


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_each_endpoint_answers_errors_as_problem_details(full, case):
    name, method, path, body, status, type_, field = case
    full.post("/api/v1/training/groups", jsonl(step_group("t-1")), content_type=NDJSON)
    response = full.post(path, body, content_type=NDJSON) if method == "post" else full.get(path)
    problem = assert_problem(response, status, type_)
    if field is not None:
        assert any(p["field"] == field for p in problem["problems"]), problem
    if field and field.startswith("$.attempts"):
        (located,) = [p for p in problem["problems"] if p["field"] == field]
        assert located["line"] == (1 if name == "submit-invalid" else 2)
    operation = _operation(_schema(Client()), method, path)
    if operation is not None:  # unknown URLs and wrong methods have no operation to declare
        declared = operation["responses"].get(str(status), {}).get("content", {})
        assert "application/problem+json" in declared, (name, sorted(operation["responses"]))


def test_a_reused_idempotency_key_is_a_422_problem(full):
    url = "/api/v1/training/groups"
    full.post(url, jsonl(group()), content_type=NDJSON, HTTP_IDEMPOTENCY_KEY="k")
    response = full.post(
        url, jsonl(group(task_id="t-9")), content_type=NDJSON, HTTP_IDEMPOTENCY_KEY="k"
    )
    assert_problem(response, 422, "urn:gagar:problem:idempotency-key-reused")


def test_no_token_a_bad_token_and_a_reviewer_session_are_problems(client):
    assert_problem(client.get("/api/v1/runs"), 401, "about:blank")
    bad = client.get("/api/v1/runs", HTTP_AUTHORIZATION="Bearer gagar_nope")
    assert_problem(bad, 401, "about:blank")
    assert bad["WWW-Authenticate"] == "Bearer"
    client.force_login(UserFactory.create(username="rita"))
    body = assert_problem(client.get("/api/v1/runs"), 403, "urn:gagar:problem:forbidden")
    assert "staff session" in body["detail"]


def test_a_token_without_the_scope_is_a_403_problem_naming_it(api_for):
    submit_only = api_for("submit")
    body = assert_problem(submit_only.get("/api/v1/labels"), 403, "urn:gagar:problem:forbidden")
    assert "read" in body["detail"] and "submit" in body["detail"]
    assert submit_only.get("/api/v1/training/runs/x/steps/0/advantages").status_code == 404
    read_only = api_for("read")
    assert read_only.post("/api/v1/bundles", b"", content_type=NDJSON).status_code == 403
    assert read_only.get("/api/v1/exports/labels").status_code == 403


def test_over_the_rate_is_a_429_problem_with_retry_after(full, settings):
    settings.GAGAR_API_RATE = "3/minute"
    for _ in range(3):
        assert full.get("/api/v1/runs").status_code == 200
    response = full.get("/api/v1/runs")
    body = assert_problem(response, 429, "urn:gagar:problem:throttled")
    assert 0 < int(response["Retry-After"]) <= 60 and body["retry_after"] == int(
        response["Retry-After"]
    )


def test_the_rate_is_counted_per_token(api_for, settings):
    settings.GAGAR_API_RATE = "2/minute"
    first, second = api_for("read"), api_for("read")
    for _ in range(2):
        assert first.get("/api/v1/runs").status_code == 200
    assert first.get("/api/v1/runs").status_code == 429
    assert second.get("/api/v1/runs").status_code == 200


def test_an_unexpected_server_error_is_a_500_problem_too(full, monkeypatch):
    def broken(**kwargs):
        raise RuntimeError("a bug")

    monkeypatch.setattr("grading.api.reads.runs_for_api", broken)
    full.raise_request_exception = False
    body = assert_problem(full.get("/api/v1/runs"), 500, "about:blank")
    assert "a bug" not in body["detail"]  # no internals leak


def test_a_malformed_rate_setting_refuses_to_start(tmp_path):
    import os
    import subprocess
    import sys

    from tests.conftest import PROJECT_ROOT

    env = {**os.environ, "DEBUG": "1", "GAGAR_API_RATE": "lots", "GAGAR_VAR_DIR": str(tmp_path)}
    result = subprocess.run(
        [sys.executable, "manage.py", "check"],
        cwd=PROJECT_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode != 0 and "GAGAR_API_RATE='lots'" in result.stderr
