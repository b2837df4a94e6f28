import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from rest_framework.test import APIClient

from grading.models import GraderRun, Group, IdempotencyKey
from grading.services.tokens import api_token_create
from tests.factories import ServiceAccountFactory
from tests.importers.helpers import jsonl
from tests.training.builders import config, expected, grade, step_group

pytestmark = pytest.mark.django_db
SUBMIT = "/api/v1/training/groups"
TIERS = {"p1": (1, 1), "p2": (3, 1), "p3": (3, 1), "p4": (2, 1)}


@pytest.fixture
def client():
    user = ServiceAccountFactory.create()
    _, secret = api_token_create(user=user, name="loop")
    c = APIClient()
    c.credentials(HTTP_AUTHORIZATION=f"Bearer {secret}")
    return c


def submit(client, *groups, **headers):
    return client.post(SUBMIT, data=jsonl(*groups), content_type="application/x-ndjson", **headers)


def step_url(run="run-1", step=0, query=""):
    return f"/api/v1/training/runs/{run}/steps/{step}/advantages{query}"


def test_it_submits_a_step_and_requests_grading_of_every_group(client):
    response = submit(client, step_group("t-1"), step_group("t-2"))
    assert response.status_code == 201, response.content
    body = response.json()
    assert body["grader_config"] == "default:analysis"
    ids = [g["group_db_id"] for g in body["groups"]]
    runs = GraderRun.objects.filter(group_id__in=ids)
    # gagar.v2: ids are strings, the group's external id is its join key.
    assert runs.count() == 2 and {g["grader_run_id"] for g in body["groups"]} == {
        str(pk) for pk in runs.values_list("id", flat=True)
    }
    assert [g["group_id"] for g in body["groups"]] == ["run-1/0/t-1", "run-1/0/t-2"]
    assert all(g["grading_status"] == "pending" for g in body["groups"])


def test_a_retry_is_a_no_op_and_an_idempotency_key_replays_the_first_answer(client):
    first = submit(client, step_group("t-1"), HTTP_IDEMPOTENCY_KEY="k-1")
    again = submit(client, step_group("t-1"), HTTP_IDEMPOTENCY_KEY="k-1")
    assert again.status_code == 201 and again["Idempotent-Replayed"] == "true"
    assert again.json() == first.json()
    plain_retry = submit(client, step_group("t-1"))
    assert plain_retry.status_code == 200
    assert plain_retry.json()["groups"][0]["outcome"] == "unchanged"
    assert Group.objects.count() == 1 and GraderRun.objects.count() == 1
    assert IdempotencyKey.objects.count() == 1


def test_a_reused_idempotency_key_with_another_body_is_422(client):
    submit(client, step_group("t-1"), HTTP_IDEMPOTENCY_KEY="k-1")
    assert submit(client, step_group("t-2"), HTTP_IDEMPOTENCY_KEY="k-1").status_code == 422


def test_a_named_configuration_is_used_and_an_unknown_one_is_400(client):
    cfg = config("scripted-1")
    response = client.post(
        SUBMIT + "?config=scripted-1",
        data=jsonl(step_group("t-1")),
        content_type="application/x-ndjson",
    )
    assert response.status_code == 201
    assert GraderRun.objects.get().config == cfg
    bad = client.post(
        SUBMIT + "?config=nope", data=jsonl(step_group("t-2")), content_type="application/x-ndjson"
    )
    assert bad.status_code == 400 and Group.objects.count() == 1


def test_a_pending_group_is_pending_without_a_deadline_and_fallback_after_one(client):
    submit(client, step_group("t-1"))
    body = client.get(step_url()).json()
    assert body["counts"] == {"graded": 0, "pending": 1, "fallback": 0, "failed": 0}
    assert body["complete"] is False and body["groups"][0]["attempts"] is None
    body = client.get(step_url(query="?deadline=0.3")).json()
    group = body["groups"][0]
    assert body["waited_seconds"] >= 0.3 and body["complete"] is True
    assert group["status"] == "fallback" and group["fallback_reason"] == "deadline"
    assert [a["coefficient"] for a in group["attempts"]] == [1.0] * 8
    g = Group.objects.get()
    _, want = expected(g, None)
    assert [a["adv_gagar"] for a in group["attempts"]] == pytest.approx(
        [w.adv_grpo for w in want.attempts], abs=1e-12
    )


def test_graded_groups_come_back_with_the_pure_modules_advantages(client):
    cfg = config()
    submit(client, step_group("t-1"))
    g = Group.objects.get()
    run = grade(g, cfg, TIERS)
    body = client.get(step_url(query="?config=test-config&deadline=5")).json()
    group = body["groups"][0]
    assert group["status"] == "graded" and group["verdict_id"] == str(run.pk)
    assert body["waited_seconds"] < 1
    grades = {a.pk: TIERS[a.external_id] for a in g.attempts.all() if a.external_id in TIERS}
    _, want = expected(g, grades)
    assert [a["adv_gagar"] for a in group["attempts"]] == pytest.approx(
        [w.adv_gagar for w in want.attempts], abs=1e-12
    )
    assert group["capped"] is True and group["lambda_raw"] == pytest.approx(want.lambda_raw)
    one = client.get(f"/api/v1/training/groups/{g.pk}/advantages?config=test-config").json()
    assert one["groups"] == body["groups"]
    uncapped = client.get(step_url(query="?config=test-config&lambda_max=none")).json()
    assert uncapped["groups"][0]["capped"] is False


def test_a_failed_grading_is_reported_with_grpo_advantages(client):
    cfg = config()
    submit(client, step_group("t-1"))
    GraderRun.objects.create(group=Group.objects.get(), config=cfg, status="failed")
    group = client.get(step_url(query="?config=test-config")).json()["groups"][0]
    assert group["status"] == "failed" and group["fallback_reason"] == "failed"
    assert group["attempts"] and all(a["coefficient"] == 1.0 for a in group["attempts"])


def test_a_step_fetch_costs_the_same_queries_for_2_or_12_groups(client):
    cfg = config()
    counts = []
    for n, step in ((2, 0), (12, 1)):
        submit(client, *(step_group(f"t-{step}-{i}", step=step) for i in range(n)))
        for g in Group.objects.filter(step__number=step):
            grade(g, cfg, TIERS)
        client.get(step_url(step=step, query="?config=test-config"))  # computes and stores
        with CaptureQueriesContext(connection) as ctx:
            body = client.get(step_url(step=step, query="?config=test-config")).json()
        assert body["counts"]["graded"] == n
        counts.append(len(ctx.captured_queries))
    # token, step, group ids, config, its approval, grading states, stored keys, the fetch.
    assert counts == [8, 8]


def test_bad_parameters_and_unknown_steps_are_refused(client):
    submit(client, step_group("t-1"))
    assert client.get(step_url(query="?lambda_max=0.5")).status_code == 400
    assert client.get(step_url(query="?deadline=-1")).status_code == 400
    assert client.get(step_url(step=9)).status_code == 404
    assert client.get("/api/v1/training/groups/999/advantages").status_code == 404


def test_it_needs_a_token():
    assert APIClient().get(step_url()).status_code in (401, 403)


def test_the_routes_are_in_the_openapi_schema(client):
    schema = client.get("/api/v1/schema?format=json").json()
    paths = schema["paths"]
    assert "/api/v1/training/groups" in paths
    assert "/api/v1/training/runs/{run}/steps/{step}/advantages" in paths
    assert "/api/v1/training/groups/{group_db_id}/advantages" in paths
    row = schema["components"]["schemas"]["AdvantageAttemptRow"]["properties"]
    assert {"adv_gagar", "reward_equivalent", "coefficient"} <= set(row)
    assert "bearerAuth" in schema["components"]["securitySchemes"]


def test_a_cut_test_output_sent_again_under_a_larger_limit_is_completed_not_regraded(
    client, settings
):
    output = "".join(f"DEBUG polling, attempt {i:06d}\n" for i in range(2000)) + "1 failed\n"
    sent = step_group("t-1")
    sent["attempts"][0]["test_output"] = output
    settings.GAGAR_MAX_TEST_OUTPUT_BYTES = 8 * 1024
    first = submit(client, sent).json()["groups"][0]
    settings.GAGAR_MAX_TEST_OUTPUT_BYTES = 1024 * 1024
    again = submit(client, sent)
    assert again.status_code == 200, again.content
    (answer,) = again.json()["groups"]
    assert answer["outcome"] == "completed"
    assert (answer["group_db_id"], answer["grader_run_id"]) == (
        first["group_db_id"],
        first["grader_run_id"],
    )
    assert GraderRun.objects.count() == 1
    stored = Group.objects.get().attempts.get(external_id="p1").test_output()
    assert stored == output.encode()
