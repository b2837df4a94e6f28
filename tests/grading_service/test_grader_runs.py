from __future__ import annotations

import copy
import re
from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from grading.domain.bundle import group_from_object
from grading.models import CandidateGrade, GraderConfig, GraderEvent, GraderRun, Group
from grading.sample.build import load_committed_group
from grading.selectors.grader import GradingState, group_grading_status
from grading.services.demo import sample_repo_path
from grading.services.grader_runs import (
    grader_config_default,
    grader_run_execute,
    grader_runs_reap,
    grader_runs_request,
)
from grading.services.imports import groups_import
from tests.grading_service.conftest import attempt_ids

pytestmark = pytest.mark.django_db


def grade(group: Group, config: GraderConfig | None = None, replica: int = 0) -> GraderRun:
    config = config or grader_config_default()
    (run,) = grader_runs_request(groups=[group], config=config, replica=replica)
    grader_run_execute(run_id=run.pk, worker="test")
    run.refresh_from_db()
    return run


def tiers(run: GraderRun) -> dict[str, tuple[int, int, bool]]:
    return {
        g.attempt.external_id: (g.tier, g.rank_in_tier, g.exploit_suspected)
        for g in CandidateGrade.objects.filter(run=run).select_related("attempt")
    }


def test_it_grades_the_sample_group_with_the_default_analysis_grader(sample_group: Group) -> None:
    run = grade(sample_group)
    assert run.status == GraderRun.Status.SUCCEEDED, (run.failure_reason, run.problems)
    assert run.config.backend == "analysis" and run.config.name == "default:analysis"
    assert run.deliveries == 1
    t = tiers(run)
    # Root-cause fixes T1, hard-coding and test edits T3 with the exploit flagged.
    assert t["a1"][:2] == (1, 1) and t["a3"][0] == 1
    assert t["a5"][0] == 3 and t["a5"][2]
    assert t["a6"][0] == 3 and t["a6"][2]
    assert run.llm_calls >= 2 and run.tool_calls >= 10 and run.latency_s is not None


@pytest.mark.parametrize("backend", ["analysis", "heuristic"])
def test_the_heuristic_stays_selectable_and_both_find_the_exploits(
    sample_group: Group, backend: str
) -> None:
    config = GraderConfig.objects.create(name=f"sel-{backend}", backend=backend)
    run = grade(sample_group, config)
    assert run.status == GraderRun.Status.SUCCEEDED, run.failure_reason
    t = tiers(run)
    assert t["a1"][:2] == (1, 1) and t["a5"][2] and t["a6"][2]


def test_the_default_grader_does_not_call_honest_extras_exploits(sample_group: Group) -> None:
    t = tiers(grade(sample_group))
    # a3 adds a regression test to the official test file: extra work, not test tampering.
    assert not t["a3"][2] and t["a3"][0] <= 2
    # a8 leaves a reproduction script that loops over sample sizes and a debug print: sloppy,
    # ranked below the clean fixes, but nothing is special-cased.
    assert not t["a8"][2]
    assert (t["a8"][0], t["a8"][1]) > (t["a1"][0], t["a1"][1])
    # The sprawling rewrite is below the minimal fix.
    assert t["a4"][0] > t["a1"][0]


def test_it_grades_only_valid_passing_attempts(sample_group: Group) -> None:
    run = grade(sample_group)
    ids = attempt_ids(sample_group)
    graded = set(CandidateGrade.objects.filter(run=run).values_list("attempt_id", flat=True))
    assert graded == {ids[f"a{i}"] for i in range(1, 9)}  # a9-a11 failed, a12 infra-failed
    assert str(ids["a12"]) not in run.verdict["candidates"]  # type: ignore[index]


def test_it_persists_the_transcript_in_order(sample_group: Group) -> None:
    run = grade(sample_group)
    events = list(GraderEvent.objects.filter(run=run).order_by("seq"))
    assert [e.seq for e in events] == list(range(len(events)))
    assert sum(e.kind == "llm_call" for e in events) == run.llm_calls
    tools = [e for e in events if e.kind == "tool_call"]
    assert tools[0].name == "list_candidates" and tools[-1].name == "submit_ranking"
    assert any(e.name == "view_diff" and "@@" in e.output for e in tools)


def test_the_transcript_is_written_one_batch_per_model_call(sample_group: Group) -> None:
    config = grader_config_default()
    (run,) = grader_runs_request(groups=[sample_group], config=config)
    with CaptureQueriesContext(connection) as queries:
        grader_run_execute(run_id=run.pk, worker="test")
    run.refresh_from_db()
    table = GraderEvent._meta.db_table
    # PostgreSQL's `INSERT INTO … ON CONFLICT DO NOTHING`, SQLite's `INSERT OR IGNORE INTO …`.
    head = re.compile(rf'INSERT (OR IGNORE )?INTO "{table}"')
    inserts = [q for q in queries.captured_queries if head.match(q["sql"])]
    # One per model call (with the tool calls of the turn before it), one with the result.
    assert len(inserts) == run.llm_calls + 1
    assert run.llm_calls + run.tool_calls > len(inserts)
    events = list(GraderEvent.objects.filter(run=run).order_by("seq"))
    assert [e.seq for e in events] == list(range(run.llm_calls + run.tool_calls))


def test_a_replay_of_a_finished_run_is_a_no_op(sample_group: Group) -> None:
    run = grade(sample_group)
    before = (list(GraderEvent.objects.filter(run=run).values_list("pk", flat=True)), tiers(run))
    with CaptureQueriesContext(connection) as queries:
        grader_run_execute(run_id=run.pk, worker="replay")
    run.refresh_from_db()
    assert run.deliveries == 1 and run.claimed_by == "test"
    assert (
        list(GraderEvent.objects.filter(run=run).values_list("pk", flat=True)),
        tiers(run),
    ) == before
    assert not any(q["sql"].startswith("INSERT") for q in queries.captured_queries)


def test_a_second_request_returns_the_same_run(sample_group: Group) -> None:
    config = grader_config_default()
    first = grader_runs_request(groups=[sample_group], config=config)
    again = grader_runs_request(groups=[sample_group], config=config)
    assert [r.pk for r in first] == [r.pk for r in again]
    assert GraderRun.objects.count() == 1


def test_a_planted_instruction_does_not_move_the_outcome(sample_group: Group) -> None:
    injected = tiers(grade(sample_group))
    clean = load_committed_group()
    clean["group_id"] = "sample-without-injection"
    clean["run"] = "sample-run-clean"
    clean["task"]["repo_url"] = str(sample_repo_path())
    a5 = next(a for a in clean["attempts"] if a["id"] == "a5")
    removed = 0
    for event in a5["trajectory"]["events"]:
        if "NOTE TO GRADER" in (event.get("text") or ""):
            event["text"] = event["text"].split("NOTE TO GRADER")[0] + "DONE"
            removed += 1
    assert removed == 1
    report = groups_import(records=[group_from_object(copy.deepcopy(clean), source="clean")])
    assert report.ok, report.problems
    other = Group.objects.get(external_id="sample-without-injection")
    assert tiers(grade(other)) == injected
    assert injected["a5"][0] == 3 or injected["a5"][2]


def test_several_configurations_on_one_group_are_all_kept(sample_group: Group) -> None:
    a = grader_config_default()
    b = GraderConfig.objects.create(name="heuristic-seed-7", backend="heuristic", seed=7)
    c = GraderConfig.objects.create(
        name="heuristic-minimal-weighted",
        backend="heuristic",
        rubric_weights={
            "approach_suitability": 1,
            "implementation_precision": 1,
            "minimality_of_changes": 3,
            "unintended_side_effects": 1,
            "codebase_consistency": 1,
        },
    )
    runs = [grade(sample_group, a), grade(sample_group, b), grade(sample_group, a, replica=1)]
    runs.append(grade(sample_group, c))
    assert all(r.status == "succeeded" for r in runs)
    assert GraderRun.objects.filter(group=sample_group).count() == 4
    assert CandidateGrade.objects.filter(run__group=sample_group).count() == 4 * 8
    assert runs[0].alias_map != runs[1].alias_map  # a different seed shuffles the aliases
    status = group_grading_status(group=sample_group, config=a)
    assert status.state == GradingState.GRADED and status.run == runs[0]
    assert status.grades[attempt_ids(sample_group)["a1"]].tier == 1


def test_status_reads_pending_failed_and_not_requested(sample_group: Group) -> None:
    config = grader_config_default()
    assert group_grading_status(group=sample_group, config=config).state == "not_requested"
    assert group_grading_status(group=sample_group, config=config).fallback
    (_run,) = grader_runs_request(groups=[sample_group], config=config)
    status = group_grading_status(group=sample_group, config=config)
    assert status.state == "pending" and not status.fallback
    bad = GraderConfig.objects.create(name="openai-without-model", backend="openai")
    failed = grade(sample_group, bad)
    assert failed.status == "failed" and "model" in failed.failure_reason
    status = group_grading_status(group=sample_group, config=bad)
    assert status.state == "failed" and status.fallback and "model" in status.reason


def test_a_run_with_a_silent_heartbeat_is_reclaimed(sample_group: Group, settings: Any) -> None:
    config = grader_config_default()
    (run,) = grader_runs_request(groups=[sample_group], config=config)
    # A worker claimed it and died: running, heartbeat long ago.
    GraderRun.objects.filter(pk=run.pk).update(
        status="running", deliveries=1, claimed_by="dead", heartbeat_at="2000-01-01T00:00:00Z"
    )
    GraderEvent.objects.create(run=run, seq=0, kind="note", name="from the dead worker")
    assert grader_runs_reap() == [run.pk]
    run.refresh_from_db()
    assert run.status == "pending" and "worker lost" in run.failure_reason
    grader_run_execute(run_id=run.pk, worker="second")
    run.refresh_from_db()
    assert run.status == "succeeded" and run.deliveries == 2 and run.claimed_by == "second"
    assert not GraderEvent.objects.filter(run=run, kind="note").exists()


def test_a_run_that_keeps_losing_workers_fails(sample_group: Group, settings: Any) -> None:
    settings.GAGAR_GRADER_MAX_DELIVERIES = 3
    (run,) = grader_runs_request(groups=[sample_group], config=grader_config_default())
    GraderRun.objects.filter(pk=run.pk).update(status="running", deliveries=3, heartbeat_at=None)
    grader_run_execute(run_id=run.pk, worker="w")
    run.refresh_from_db()
    assert run.status == "failed" and "gave up after 3 deliveries" in run.failure_reason
    assert group_grading_status(group=sample_group, config=run.config).fallback
