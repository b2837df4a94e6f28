import json

import pytest
from django.core.management import call_command
from rest_framework.test import APIClient

from grading.models import ApiToken, Attempt, Group
from grading.services.tokens import api_token_create, api_token_revoke
from tests.factories import ServiceAccountFactory
from tests.importers.helpers import attempt, group, jsonl

pytestmark = pytest.mark.django_db
URL = "/api/v1/bundles"


@pytest.fixture
def client_with_token():
    user = ServiceAccountFactory.create()
    token, secret = api_token_create(user=user, name="loop")
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {secret}")
    return client, token


def post(client, body: bytes, query: str = ""):
    return client.post(URL + query, data=body, content_type="application/x-ndjson")


def test_it_imports_a_bundle_and_returns_ids(client_with_token):
    client, _ = client_with_token
    response = post(client, jsonl(group(task_id="t-1"), group(task_id="t-2")))
    assert response.status_code == 201, response.content
    body = response.json()
    assert [g["task"] for g in body["groups"]] == ["t-1", "t-2"]
    assert {g["group_db_id"] for g in body["groups"]} == set(
        Group.objects.values_list("id", flat=True)
    )
    assert all(isinstance(g["group_id"], str) for g in body["groups"])


def test_a_retry_after_a_network_error_never_duplicates(client_with_token):
    client, _ = client_with_token
    first = post(client, jsonl(group()))
    again = post(client, jsonl(group()))
    assert again.status_code == 200
    assert again.json()["groups"][0]["outcome"] == "unchanged"
    assert again.json()["groups"][0]["group_db_id"] == first.json()["groups"][0]["group_db_id"]
    assert Attempt.objects.count() == 2


def test_it_accepts_a_json_array_or_a_single_object(client_with_token):
    client, _ = client_with_token
    assert post(client, json.dumps([group(task_id="t-1")]).encode()).status_code == 201
    assert post(client, json.dumps(group(task_id="t-2")).encode()).status_code == 201


def test_bad_input_is_400_with_line_and_field_and_writes_nothing(client_with_token):
    client, _ = client_with_token
    bad = group(task_id="t-2")
    bad["attempts"][0]["status"] = "great"
    response = post(client, jsonl(group(task_id="t-1"), bad))
    assert response.status_code == 400
    problem = response.json()["problems"][0]
    assert problem["line"] == 2 and problem["field"] == "$.attempts[0].status"
    assert Group.objects.count() == 0


def test_partial_mode_over_the_api(client_with_token):
    client, _ = client_with_token
    response = post(client, jsonl(group(task_id="t-1")) + b"garbage\n", "?partial=1")
    assert response.status_code == 201
    assert len(response.json()["problems"]) == 1 and Group.objects.count() == 1


def test_sidecar_paths_are_refused_over_the_api(client_with_token):
    client, _ = client_with_token
    line = group()
    line["attempts"][0]["trajectory"] = {"format": "chat", "path": "../../etc/passwd"}
    response = post(client, jsonl(line))
    assert response.status_code == 400
    assert "not accepted here" in response.json()["problems"][0]["message"]


def test_empty_body_is_a_clear_error(client_with_token):
    client, _ = client_with_token
    assert post(client, b"").status_code == 400


def test_it_requires_a_valid_unrevoked_token(client_with_token):
    client, token = client_with_token
    assert post(APIClient(), jsonl(group())).status_code == 401
    stranger = APIClient()
    stranger.credentials(HTTP_AUTHORIZATION="Bearer gagar_not-a-real-token")
    assert post(stranger, jsonl(group())).status_code == 401
    api_token_revoke(token=token)
    assert post(client, jsonl(group())).status_code == 401


def test_tokens_are_stored_hashed(capsys):
    user = ServiceAccountFactory.create(username="loop")
    call_command("create_api_token", "loop")
    secret = capsys.readouterr().out.strip()
    token = ApiToken.objects.get(user=user)
    assert secret.startswith(token.prefix) and secret not in (token.key_hash, token.prefix)


def test_the_openapi_schema_describes_the_endpoint(client_with_token):
    client, _ = client_with_token
    response = client.get("/api/v1/schema", HTTP_ACCEPT="application/json")
    assert response.status_code == 200
    assert "/api/v1/bundles" in response.content.decode()


def test_a_cut_test_output_sent_again_under_a_larger_limit_is_completed(
    client_with_token, settings
):
    client, _ = client_with_token
    output = "".join(f"DEBUG polling, attempt {i:06d}\n" for i in range(2000)) + "1 failed\n"
    bundle = jsonl(group(attempts=[attempt("a1", test_output=output)]))
    settings.GAGAR_MAX_TEST_OUTPUT_BYTES = 8 * 1024
    first = post(client, bundle).json()["groups"][0]
    assert len(Attempt.objects.get().test_output()) < len(output)

    settings.GAGAR_MAX_TEST_OUTPUT_BYTES = 1024 * 1024
    again = post(client, bundle)
    assert again.status_code == 200, again.content
    (answer,) = again.json()["groups"]
    assert answer["outcome"] == "completed"
    assert answer["group_db_id"] == first["group_db_id"]
    assert "1 completed" in again.json()["summary"]
    assert Attempt.objects.get().test_output() == output.encode()
