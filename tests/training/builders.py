"""Groups and verdicts for the training tests: real imports and real grader-run rows."""

from __future__ import annotations

from typing import Any

from django.utils import timezone

from grading.advantages import AttemptInput, redistribute
from grading.advantages import GroupAdvantages as PureAdvantages
from grading.domain.bundle import group_from_object
from grading.models import Attempt, CandidateGrade, GraderConfig, GraderRun, Group
from grading.services.imports import groups_import
from tests.importers.helpers import PATCH, attempt, group

# A second, larger patch so the heuristic grader has something to tell apart.
BIG_PATCH = (
    "diff --git a/pkg/sizes.py b/pkg/sizes.py\n"
    "--- a/pkg/sizes.py\n"
    "+++ b/pkg/sizes.py\n"
    "@@ -1,3 +1,8 @@\n"
    " def f(n):\n"
    "-    return n > 1\n"
    "+    if n == 1:\n"
    "+        return True\n"
    "+    if n == 0:\n"
    "+        return False\n"
    "+    return n >= 1\n"
    "+\n"
    " \n"
)


def step_group(task_id: str, *, run: str = "run-1", step: int = 0) -> dict[str, Any]:
    """Four passers of varied quality, two failures, one exploit and one infra failure."""
    attempts = [
        attempt("p1", patch=PATCH),
        attempt("p2", patch=BIG_PATCH),
        attempt("p3", patch=PATCH),
        attempt("p4", patch=BIG_PATCH),
        attempt("f1", test_reward=0.0, patch=None),
        attempt("f2", test_reward=0.0, patch=None),
        attempt("x1", status="exploit_confirmed", patch=PATCH),
        attempt("i1", status="infra_failed", test_reward=0.0, patch=None),
    ]
    return group(task_id=task_id, run=run, step=step, attempts=attempts)


def import_groups(*objs: dict[str, Any]) -> list[Group]:
    report = groups_import(records=[group_from_object(o, source="test") for o in objs])
    return list(Group.objects.filter(pk__in=[r.group_id for r in report.results]).order_by("pk"))


def config(name: str = "test-config") -> GraderConfig:
    return GraderConfig.objects.get_or_create(
        name=name, defaults={"backend": GraderConfig.Backend.SCRIPTED, "model": "m-1"}
    )[0]


def grade(
    group: Group, cfg: GraderConfig, tiers: dict[str, tuple[int, int]], *, replica: int = 0
) -> GraderRun:
    """A succeeded run grading the passers named in `tiers` (external id → (tier, rank))."""
    run = GraderRun.objects.create(
        group=group,
        config=cfg,
        replica=replica,
        status=GraderRun.Status.SUCCEEDED,
        verdict={"candidates": {}},
        finished_at=timezone.now(),
    )
    by_id = {a.external_id: a for a in group.attempts.all()}
    CandidateGrade.objects.bulk_create(
        [
            CandidateGrade(run=run, attempt=by_id[ext], tier=t, rank_in_tier=r, weighted_score=3.0)
            for ext, (t, r) in tiers.items()
        ]
    )
    return run


def expected(
    group: Group, grades: dict[int, tuple[int, int]] | None, **kwargs: Any
) -> tuple[list[Attempt], PureAdvantages]:
    """The pure module's answer for a group: `grades` by attempt pk, None = fallback."""
    attempts = list(group.attempts.order_by("index"))
    inputs = [
        AttemptInput(
            status=a.status,  # type: ignore[arg-type]
            reward=a.test_reward,
            tier=(grades or {}).get(a.pk, (None, None))[0] if a.passed else None,
            rank=(grades or {}).get(a.pk, (None, None))[1] if a.passed else None,
        )
        for a in attempts
    ]
    return attempts, redistribute(inputs, fallback=grades is None, **kwargs)
