"""Bad input over HTTP: the bundles and training endpoints read bodies with the importer's
reader (the same words for binary, compressed and non-UTF-8 bodies), answer RFC 9457 problems
that carry `instance` and a `source` for every problem, locate a JSON array's groups by index,
and list every bad query parameter of the advantages endpoint, in plain words."""

from __future__ import annotations

import gzip
import json
import random

import pytest
from rest_framework.test import APIClient

from grading.models import Group, Task
from grading.services.tokens import api_token_create
from tests.factories import ServiceAccountFactory
from tests.importers.helpers import group, jsonl
from tests.training.builders import step_group

pytestmark = pytest.mark.django_db
ENDPOINTS = ["/api/v1/bundles", "/api/v1/training/groups"]


@pytest.fixture
def client():
    user = ServiceAccountFactory.create()
    _, secret = api_token_create(user=user, name="loop")
    c = APIClient()
    c.credentials(HTTP_AUTHORIZATION=f"Bearer {secret}")
    return c


def post(client, url, body: bytes, content_type="application/x-ndjson"):
    return client.post(url, data=body, content_type=content_type)


def refused(response) -> dict:
    assert response.status_code == 400, response.content
    assert Group.objects.count() == 0 and Task.objects.count() == 0
    return response.json()


@pytest.mark.parametrize("url", ENDPOINTS)
def test_a_gzip_body_is_one_problem_saying_so_with_the_instance(client, url):
    body = refused(post(client, url, gzip.compress(jsonl(group()))))
    assert body["instance"] == url
    assert body["problems"] == [
        {
            "source": "request",
            "line": None,
            "field": "",
            "message": "gzip-compressed data, not JSON text; decompress it first (gunzip)",
        }
    ]


@pytest.mark.parametrize("url", ENDPOINTS)
def test_random_bytes_are_one_binary_problem(client, url):
    body = refused(post(client, url, random.Random(3).randbytes(4096)))
    assert len(body["problems"]) == 1
    assert body["problems"][0]["message"].startswith("binary data, not JSON text")


@pytest.mark.parametrize("url", ENDPOINTS)
def test_a_latin1_byte_names_the_field_and_does_not_suggest_patch_base64(client, url):
    bad = group()
    bad["task"]["problem_statement"] = "café"
    line = json.dumps(bad, ensure_ascii=False).encode("latin-1") + b"\n"
    (problem,) = refused(post(client, url, line))["problems"]
    assert (problem["line"], problem["field"]) == (1, "$.task.problem_statement")
    assert problem["message"].startswith(f"not UTF-8: byte 0xe9 at byte {line.index(b'\xe9')}")
    assert "patch_base64" not in problem["message"]


@pytest.mark.parametrize("url", ENDPOINTS)
def test_the_empty_body_problem_has_a_source_and_the_instance(client, url):
    body = refused(post(client, url, b""))
    assert body["instance"] == url
    assert body["problems"] == [
        {"source": "request", "line": None, "field": "", "message": "the body holds no groups"}
    ]


@pytest.mark.parametrize("url", ENDPOINTS)
def test_a_json_array_bodys_groups_are_located_by_index_not_line(client, url):
    items = [group(task_id="t-1"), group(task_id="t-2", schema="gagar.group.v9")]
    body = refused(post(client, url, json.dumps(items).encode(), "application/json"))
    assert body["instance"] == url
    (problem,) = body["problems"]
    assert (problem["index"], problem["line"], problem["field"]) == (1, None, "$.schema")
    assert problem["message"] == 'expected "gagar.group.v1", found "gagar.group.v9"'


def test_json_lines_bodies_keep_their_lines_and_have_no_index(client):
    body = refused(post(client, ENDPOINTS[0], jsonl(group(), group(schema="x"))))
    (problem,) = body["problems"]
    assert problem["line"] == 2 and "index" not in problem


def advantages(client, query: str):
    post(client, "/api/v1/training/groups", jsonl(step_group("t-1")))
    return client.get(f"/api/v1/training/runs/run-1/steps/0/advantages?{query}")


def test_every_bad_advantages_parameter_is_listed_in_plain_words(client):
    response = advantages(client, "lambda_max=abc&std_ddof=5&normalize_std=maybe")
    assert response.status_code == 400
    problems = {p["field"]: p["message"] for p in response.json()["problems"]}
    assert problems == {
        "lambda_max": 'must be a number ≥ 1, or none (uncapped); found "abc"',
        "normalize_std": "must be true or false (1, 0, true, false, yes, no)",
        "std_ddof": "must be 0 or 1, found 5",
    }


@pytest.mark.parametrize("value", ["abc", "0.5", "nan", "inf"])
def test_a_bad_lambda_max_is_not_pythons_own_message(client, value):
    response = advantages(client, f"lambda_max={value}")
    assert response.status_code == 400
    (problem,) = response.json()["problems"]
    assert problem["field"] == "lambda_max"
    assert "could not convert" not in problem["message"]
    assert problem["message"].startswith("must be a number ≥ 1, or none")


def test_a_good_lambda_max_and_none_still_answer(client):
    assert advantages(client, "lambda_max=2").status_code == 200
    assert advantages(client, "lambda_max=none").status_code == 200


def test_the_documented_invalid_bundle_answer_is_what_the_api_answers(client):
    """docs/training-loop.md's example problem, field for field (instance, source, message)."""
    from pathlib import Path

    docs = (Path(__file__).resolve().parents[2] / "docs" / "training-loop.md").read_text()
    start = docs.index('{"type": "urn:gagar:problem:invalid-bundle"')
    documented = json.loads(docs[start : docs.index("```", start)])
    bad = group(task_id="t-2")
    bad["attempts"][0]["status"] = "great"
    body = refused(post(client, "/api/v1/bundles", jsonl(group(task_id="t-1"), bad)))
    assert body["instance"] == documented["instance"]
    assert body["problems"] == documented["problems"]
    assert set(body) == set(documented)
