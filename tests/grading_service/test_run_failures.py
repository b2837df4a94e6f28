"""Any exception of a grader run ends it `failed` with the reason, and its group falls back to
plain GRPO: graded inline (`manage.py grade --inline`) here, on a real worker in test_worker.py."""

from __future__ import annotations

from collections.abc import Iterator
from io import StringIO
from typing import Any

import pytest
from django.core.management import call_command

from grading.models import CandidateGrade, GraderConfig, GraderRun, GroupAdvantages
from grading.selectors.grader import group_grading_status
from grading.services.advantages import group_advantages_refresh
from tests.grader.fakes.llm_server import FakeLLMServer, FakeResponse, openai_response
from tests.importers.helpers import PATCH, attempt, group
from tests.training.builders import import_groups

pytestmark = pytest.mark.django_db

RENAME = (
    "diff --git a/old.py b/new.py\nsimilarity index 100%\nrename from old.py\nrename to new.py\n"
)


def edit(n: int) -> str:
    return PATCH.replace("n >= 1", f"n >= {n}")


def renaming_group(task: str) -> dict[str, Any]:
    """Three passing candidates; one alone also renames a file (no added or removed line)."""
    return group(
        task,
        attempts=[
            attempt("p1", patch=edit(1)),
            attempt("p2", patch=edit(2)),
            attempt("p3", patch=edit(3) + RENAME),
            attempt("f1", test_reward=0.0, patch=None),
        ],
    )


def grade_inline(*args: str) -> str:
    out = StringIO()
    call_command("grade", *args, "--inline", stdout=out)
    return out.getvalue()


@pytest.fixture
def llm() -> Iterator[FakeLLMServer]:
    server = FakeLLMServer().start()
    try:
        yield server
    finally:
        server.stop()


def broken_usage() -> FakeResponse:
    """An answer the client cannot read: a token count that is not a number (ValueError)."""
    body = openai_response("I will look at the candidates.", [])
    body["usage"] = {"prompt_tokens": "many", "completion_tokens": 1}
    return FakeResponse(body=body)


def test_a_pure_rename_alone_in_one_of_three_passers_is_graded_inline(settings: Any) -> None:
    settings.GAGAR_SANDBOX = "none"
    (g,) = import_groups(renaming_group("t-rename"))
    GraderConfig.objects.create(name="heuristic", backend="heuristic")
    out = grade_inline("--group", str(g.pk), "--config", "heuristic")
    run = GraderRun.objects.get(group=g)
    assert run.status == "succeeded", (run.failure_reason, out)
    assert CandidateGrade.objects.filter(run=run).count() == 3


def test_an_exception_in_an_inline_run_ends_it_failed_and_the_next_run_goes_on(
    settings: Any, llm: FakeLLMServer
) -> None:
    settings.GAGAR_SANDBOX = "none"
    settings.GAGAR_GRADER_API_KEY = "test-key"
    settings.GAGAR_GRADER_MAX_RETRIES = 0
    first, second = import_groups(renaming_group("t-a"), renaming_group("t-b"))
    llm.enqueue(broken_usage(), broken_usage())
    GraderConfig.objects.create(
        name="broken-server", backend="openai", base_url=f"{llm.url}/v1", model="m"
    )
    groups = ("--group", str(first.pk), "--group", str(second.pk))
    out = grade_inline(*groups, "--config", "broken-server")

    runs = list(GraderRun.objects.filter(group__in=[first, second]).order_by("group_id"))
    assert [r.status for r in runs] == ["failed", "failed"], out
    for run in runs:
        assert run.failure_reason.startswith("ValueError: invalid literal for int()")
        assert run.finished_at is not None
        assert f"run {run.pk} group {run.group_id} #0: failed (ValueError" in out
        assert not CandidateGrade.objects.filter(run=run).exists()
        grading = group_grading_status(group=run.group, config=run.config)
        assert grading.fallback and "ValueError" in grading.reason
    assert len(llm.requests) == 2  # each run called once, none retried forever

    # The group's advantages are plain GRPO's: no tier, the failure as the reason.
    group_advantages_refresh(group_ids=[first.pk], config=runs[0].config)
    stored = GroupAdvantages.objects.get(group=first, config=runs[0].config)
    assert stored.fallback and stored.fallback_reason == "failed"
    assert all(row["coefficient"] == 1.0 for row in stored.attempts)


def test_an_exception_outside_the_agent_loop_ends_the_run_failed_too(
    settings: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Reading the group's inputs, or writing the verdict, is part of the run as well."""
    settings.GAGAR_SANDBOX = "none"
    (g,) = import_groups(renaming_group("t-inputs"))
    GraderConfig.objects.create(name="heuristic", backend="heuristic")

    def broken(**_: Any) -> None:
        raise LookupError("the group's inputs cannot be read")

    monkeypatch.setattr("grading.services.grader_runs.group_input", broken)
    grade_inline("--group", str(g.pk), "--config", "heuristic")
    run = GraderRun.objects.get(group=g)
    assert (run.status, run.failure_reason) == (
        "failed",
        "LookupError: the group's inputs cannot be read",
    )
