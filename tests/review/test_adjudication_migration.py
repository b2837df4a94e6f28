"""The adjudication migration keeps flags resolved before it existed, consistent with the new
constraint (loses nothing, refuses nothing)."""

from __future__ import annotations

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.utils import timezone

pytestmark = pytest.mark.django_db(transaction=True)
BEFORE = [("review", "0003_candidate_viewed_paths"), ("grading", "0005_patch_plural")]
AFTER = [("review", "0004_adjudication")]


def test_flags_resolved_in_the_admin_before_adjudication_get_a_consistent_outcome(
    sample_group, reviewer, campaign
):
    from review.services.queue import assignment_next

    assignment = assignment_next(campaign=campaign, reviewer=reviewer)
    candidate_ids = list(assignment.candidates.values_list("pk", flat=True)[:2])
    executor = MigrationExecutor(connection)
    try:
        _migrate_and_check(executor, sample_group, candidate_ids)
    finally:
        # Back to the latest schema, whatever migrations come after this one.
        executor = MigrationExecutor(connection)
        executor.migrate(executor.loader.graph.leaf_nodes())


def _migrate_and_check(executor, sample_group, candidate_ids):
    executor.migrate(BEFORE)
    old = executor.loader.project_state(BEFORE).apps
    config = old.get_model("grading", "GraderConfig").objects.create(
        name="old", backend="heuristic"
    )
    run = old.get_model("grading", "GraderRun").objects.create(
        group_id=sample_group.pk, config=config, status="succeeded", verdict={"candidates": {}}
    )
    created = timezone.now()
    Flag = old.get_model("review", "Disagreement")
    resolved = Flag.objects.create(
        candidate_id=candidate_ids[0], grader_run=run, status="resolved", created_at=created
    )
    still_open = Flag.objects.create(
        candidate_id=candidate_ids[1], grader_run=run, note="keep me", created_at=created
    )

    executor = MigrationExecutor(connection)
    executor.migrate(AFTER)
    new = executor.loader.project_state(AFTER).apps.get_model("review", "Disagreement")
    after = new.objects.get(pk=resolved.pk)
    assert (after.status, after.resolution, after.resolved_at) == ("resolved", "unclear", created)
    untouched = new.objects.get(pk=still_open.pk)
    assert (untouched.status, untouched.resolution, untouched.note) == ("open", "", "keep me")
    assert untouched.resolved_at is None
