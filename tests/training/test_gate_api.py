"""The training API and the grader gate: approval in every answer, refusal when required, runs
pinned to the configuration that graded their first step."""

from __future__ import annotations

from typing import Any

import pytest
from rest_framework.test import APIClient

from grading.models import GraderApproval, GraderConfig, GraderRun, Group, Run, RunGraderSwitch
from grading.services.tokens import api_token_create
from review.services.grader_gate import grader_approve_shipped
from tests.factories import ServiceAccountFactory
from tests.importers.helpers import jsonl
from tests.training.builders import config, step_group

pytestmark = pytest.mark.django_db
SUBMIT = "/api/v1/training/groups"


@pytest.fixture
def client() -> APIClient:
    user = ServiceAccountFactory.create(username="loop")
    _, secret = api_token_create(user=user, name="loop")
    c = APIClient()
    c.credentials(HTTP_AUTHORIZATION=f"Bearer {secret}")
    return c


def submit(client: APIClient, *groups: dict[str, Any], query: str = "") -> Any:
    return client.post(SUBMIT + query, data=jsonl(*groups), content_type="application/x-ndjson")


def test_every_answer_names_the_grader_and_its_approval(client: APIClient) -> None:
    body = submit(client, step_group("t-1")).json()
    assert body["grader_config"] == "default:analysis"
    (state,) = body["grader_approval"]
    assert state["config"] == "default:analysis" and state["approved"] is False
    assert state["reason"] == "never evaluated against people"
    assert body["groups"][0]["grader_config"] == "default:analysis"
    assert body["groups"][0]["grader_approved"] is False
    grader_approve_shipped(config=GraderConfig.objects.get(name="default:analysis"))
    fetched = client.get("/api/v1/training/runs/run-1/steps/0/advantages").json()
    assert fetched["grader_config"] == "default:analysis"
    assert fetched["grader_approval"]["approved"] is True
    assert fetched["grader_approval"]["basis"] == "leave_one_task_out"


def test_approval_required_refuses_unapproved_configurations_and_writes_nothing(
    client: APIClient, settings: Any
) -> None:
    settings.GAGAR_REQUIRE_APPROVED_GRADER = True
    refused = submit(client, step_group("t-1"))
    assert refused.status_code == 409
    problem = refused.json()
    assert problem["type"] == "urn:gagar:problem:grader-not-approved"
    assert "default:analysis" in problem["detail"] and "grader_eval --approve" in problem["detail"]
    assert not Group.objects.exists() and not GraderRun.objects.exists()
    # An approval that did not pass is still not an approval.
    default = GraderConfig.objects.get(name="default:analysis")
    settings.GAGAR_GATE_MIN_KAPPA = 0.99
    assert not grader_approve_shipped(config=default).passed
    assert submit(client, step_group("t-1")).status_code == 409
    settings.GAGAR_GATE_MIN_KAPPA = 0.65
    assert grader_approve_shipped(config=default).passed
    accepted = submit(client, step_group("t-1"))
    assert accepted.status_code == 201, accepted.content
    assert accepted.json()["groups"][0]["grader_approved"] is True
    # Reading advantages with an unapproved configuration is refused too.
    config()
    url = "/api/v1/training/runs/run-1/steps/0/advantages?config=test-config"
    assert client.get(url).status_code == 409
    assert client.get("/api/v1/training/runs/run-1/steps/0/advantages").status_code == 200


def test_approval_is_off_by_default(client: APIClient) -> None:
    assert submit(client, step_group("t-1")).status_code == 201
    assert not GraderApproval.objects.exists()


def test_a_run_stays_with_the_configuration_of_its_first_step(
    client: APIClient, settings: Any
) -> None:
    submit(client, step_group("t-1", step=0))
    run = Run.objects.get(name="run-1")
    assert run.grader_config is not None and run.grader_config.name == "default:analysis"
    # The default changes (the settings now name the heuristic grader): step 1 of the same
    # run is still graded by its pinned configuration, a new run by the new default.
    settings.GAGAR_GRADER_BACKEND = "heuristic"
    body = submit(client, step_group("t-2", step=1)).json()
    assert body["groups"][0]["grader_config"] == "default:analysis"
    fresh = submit(client, step_group("t-3", run="run-2")).json()
    assert fresh["groups"][0]["grader_config"] == "default:heuristic"
    assert not RunGraderSwitch.objects.exists()
    # Fetching without naming a configuration reads the run's pinned one.
    fetched = client.get("/api/v1/training/runs/run-1/steps/1/advantages").json()
    assert fetched["grader_config"] == "default:analysis"


def test_an_explicit_switch_is_recorded(client: APIClient) -> None:
    submit(client, step_group("t-1", step=0))
    other = config("other")
    body = submit(client, step_group("t-2", step=1), query="?config=other").json()
    assert body["groups"][0]["grader_config"] == "other"
    switch = RunGraderSwitch.objects.get()
    assert switch.from_config is not None and switch.from_config.name == "default:analysis"
    assert switch.to_config == other and switch.at_step == 1 and switch.requested_by == "loop"
    run = Run.objects.get(name="run-1")
    assert run.grader_config == other
    # From now on the run's default is the one it switched to.
    later = submit(client, step_group("t-3", step=2)).json()
    assert later["groups"][0]["grader_config"] == "other"
    assert RunGraderSwitch.objects.count() == 1


def test_the_dashboard_lists_approvals_and_decisions_escaped(client: APIClient) -> None:
    from django.test import Client

    from tests.factories import StaffFactory, UserFactory

    default = config("<i>odd</i>")
    shipped = GraderConfig.objects.create(name="default:analysis", backend="analysis")
    grader_approve_shipped(config=shipped, decided_by="lead")
    GraderApproval.objects.create(
        config=default, basis="gold", campaigns=["<b>gold</b>"], thresholds={"kappa": 0.65},
        figures={"stats": {"kappa": {"estimate": 0.5, "low": 0.3, "high": 0.7}}},
        passed=False, failures=["kappa 0.500 < 0.65"],
    )  # fmt: skip
    web = Client()
    web.force_login(UserFactory.create())
    assert web.get("/dashboards/gate").status_code in (302, 403)
    web.force_login(StaffFactory.create())
    page = web.get("/dashboards/gate").content.decode()
    assert "&lt;i&gt;odd&lt;/i&gt;" in page and "<i>odd</i>" not in page
    assert "&lt;b&gt;gold&lt;/b&gt;" in page and "kappa 0.500 &lt; 0.65" in page
    assert "0.733" in page and "0.500" in page and "[0.30, 0.70]" in page
    assert "passed on its fit&#x27;s leave-one-task-out figures" in page
