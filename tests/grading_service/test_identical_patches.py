"""Identical patches are one candidate for the grader; the grade goes to every attempt that
submitted the patch, and each keeps its own advantage."""

from __future__ import annotations

import pytest

from grading.advantages import AttemptInput, redistribute
from grading.models import Attempt, CandidateGrade, GraderRun, GroupAdvantages
from grading.services.advantages import group_advantages_refresh
from grading.services.grader_inputs import group_input
from grading.services.grader_runs import (
    grader_config_default,
    grader_run_execute,
    grader_runs_request,
)
from tests.importers.helpers import PATCH, attempt, group
from tests.training.builders import BIG_PATCH, import_groups

pytestmark = pytest.mark.django_db


def duplicated() -> dict:
    return group(
        "t-dup",
        attempts=[
            attempt("p1", patch=PATCH),
            attempt("p2", patch=BIG_PATCH),
            attempt("p3", patch=PATCH),  # the same bytes as p1
            attempt("p4", patch=BIG_PATCH),  # and as p2
            attempt("p5", patch=BIG_PATCH),
            attempt("f1", test_reward=0.0, patch=PATCH),  # same patch, but it failed
            attempt("f2", test_reward=0.0, patch=None),
            attempt("f3", test_reward=0.0, patch=None),  # no patch: shares nothing
        ],
    )


def test_the_grader_sees_one_candidate_per_distinct_patch(settings):
    (g,) = import_groups(duplicated())
    ids = dict(g.attempts.values_list("external_id", "pk"))
    inputs = group_input(group_id=g.pk)
    keys = sorted(int(c.key) for c in inputs.candidates)
    assert keys == sorted(ids[e] for e in ("p1", "p2", "f1", "f2", "f3"))
    assert sum(c.passed for c in inputs.candidates) == 2


def test_its_grade_applies_to_every_attempt_with_the_patch(settings):
    settings.GAGAR_SANDBOX = "none"
    (g,) = import_groups(duplicated())
    (run,) = grader_runs_request(groups=[g], config=grader_config_default(), enqueue=False)
    grader_run_execute(run_id=run.pk, worker="test")
    run.refresh_from_db()
    assert run.status == GraderRun.Status.SUCCEEDED, run.failure_reason
    assert len(run.verdict["candidates"]) == 2  # judged once per distinct passing patch
    grades = {
        g.attempt.external_id: (g.tier, g.rank_in_tier, g.weighted_score, g.scores)
        for g in CandidateGrade.objects.select_related("attempt")
    }
    assert set(grades) == {"p1", "p2", "p3", "p4", "p5"}
    assert grades["p1"] == grades["p3"]
    assert grades["p2"] == grades["p4"] == grades["p5"]

    cfg = run.config
    assert group_advantages_refresh(group_ids=[g.pk], config=cfg) == 1
    rows = {r["attempt_external_id"]: r for r in GroupAdvantages.objects.get(group=g).attempts}
    assert len(rows) == 8  # every attempt has its own row
    attempts = list(Attempt.objects.filter(group=g).order_by("index"))
    by_pk = {c.attempt_id: c for c in CandidateGrade.objects.filter(run=run)}
    want = redistribute(
        [
            AttemptInput(
                status=a.status,
                reward=a.test_reward,
                tier=by_pk[a.pk].tier if a.pk in by_pk else None,
                rank=by_pk[a.pk].rank_in_tier if a.pk in by_pk else None,
            )
            for a in attempts
        ]
    )
    for a, w in zip(attempts, want.attempts, strict=True):
        assert rows[a.external_id]["adv_gagar"] == pytest.approx(w.adv_gagar, abs=1e-12)
    assert rows["p1"]["coefficient"] == rows["p3"]["coefficient"]
