"""The documented training-loop script, against a live server over real HTTP."""

import importlib.util
import sys

import httpx
import pytest

from grading.models import GraderRun, Group
from grading.services.grader_runs import grader_run_execute
from grading.services.tokens import api_token_create
from tests.conftest import PROJECT_ROOT
from tests.factories import ServiceAccountFactory
from tests.importers.helpers import jsonl
from tests.training.builders import expected, step_group

pytestmark = pytest.mark.django_db(transaction=True)


def _example():
    path = PROJECT_ROOT / "docs" / "examples" / "training_loop.py"
    spec = importlib.util.spec_from_file_location("training_loop_example", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def token():
    _, secret = api_token_create(user=ServiceAccountFactory.create(), name="loop")
    return secret


def test_the_script_gets_flagged_grpo_when_nothing_grades_before_the_deadline(
    live_server, token, tmp_path, capsys
):
    bundle = tmp_path / "step.jsonl"
    bundle.write_bytes(jsonl(step_group("t-1"), step_group("t-2")))
    example = _example()
    assert (
        example.main([str(bundle), "--url", live_server.url, "--token", token, "--deadline", "0.5"])
        == 0
    )
    out = capsys.readouterr().out
    assert "'fallback': 2" in out and "[fallback: deadline]" in out
    assert GraderRun.objects.filter(status="pending").count() == 2


def test_the_script_receives_graded_advantages_equal_to_the_pure_module(live_server, token):
    example = _example()
    bundle = jsonl(step_group("t-1"), step_group("t-2"))
    with httpx.Client(
        base_url=live_server.url, headers={"Authorization": f"Bearer {token}"}
    ) as client:
        submitted = example.submit_step(client, bundle)
        # Grading as a worker would do it, by the service (no worker in this test).
        for run in GraderRun.objects.filter(group_id__in=[g["id"] for g in submitted]):
            grader_run_execute(run_id=run.pk, worker="test")
        payload = example.fetch_advantages(client, "run-1", 0, deadline_s=5)
    assert payload["counts"]["graded"] == 2, payload["groups"][0]
    by_attempt = example.advantages_by_attempt(payload)
    for group in payload["groups"]:
        g = Group.objects.get(pk=group["group_id"])
        run = GraderRun.objects.get(group=g, status="succeeded")
        grades = {cg.attempt_id: (cg.tier, cg.rank_in_tier) for cg in run.grades.all()}
        _, want = expected(g, grades)
        assert [a["adv_gagar"] for a in group["attempts"]] == pytest.approx(
            [w.adv_gagar for w in want.attempts], abs=1e-12
        )
        assert group["verdict_id"] == run.pk
    assert len(by_attempt) == 8  # attempt ids repeat across the two groups
