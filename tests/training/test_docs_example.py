"""The documented training-loop script, against a live server over real HTTP."""

import importlib.util
import sys

import pytest
from gagar_client import Client

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


def test_the_script_receives_graded_advantages_per_group_and_attempt(live_server, token):
    example = _example()
    # The same attempt ids in both groups; in the second, p3 fails, so the values differ.
    second = step_group("t-2")
    second["attempts"][2].update(test_reward=0.0, patch=None)
    bundle = jsonl(step_group("t-1"), second)
    with Client(live_server.url, token) as gagar:
        submitted = example.submit_step(gagar, bundle)
        # Grading as a worker would do it, by the service (no worker in this test).
        for run in GraderRun.objects.filter(group_id__in=[g.group_db_id for g in submitted.groups]):
            grader_run_execute(run_id=run.pk, worker="test")
        adv = example.fetch_advantages(gagar, "run-1", 0, deadline_s=5)
    assert adv.counts["graded"] == 2, adv.groups[0]
    by_key = example.advantages_by_key(adv)
    # The attempt ids repeat across the two groups: 16 values, none overwritten.
    assert len(by_key) == 16
    for group in adv.groups:
        g = Group.objects.get(pk=group.group_db_id)
        run = GraderRun.objects.get(group=g, status="succeeded")
        grades = {cg.attempt_id: (cg.tier, cg.rank_in_tier) for cg in run.grades.all()}
        attempts, want = expected(g, grades)
        got = [by_key[(group.group, a.external_id)] for a in attempts]
        assert got == pytest.approx([w.adv_gagar for w in want.attempts], abs=1e-12)
        assert group.raw["verdict_id"] == str(run.pk)
    # Same attempt id, different groups, different advantages (the collapse would hide this).
    (first, second) = adv.groups
    assert any(
        by_key[(first.group, a)] != by_key[(second.group, a)] for a in ("p1", "p2", "p3", "p4")
    )
