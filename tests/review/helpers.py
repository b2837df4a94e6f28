"""Small builders for queue tests that need many groups but no diffs."""

from __future__ import annotations

from typing import Any

from grading.models import Attempt, Group, Run, Step, Task


def make_groups(count: int, *, passing: int = 2, run_name: str = "queue-run") -> list[Group]:
    run, _ = Run.objects.get_or_create(name=run_name)
    step, _ = Step.objects.get_or_create(run=run, number=1)
    groups = []
    for i in range(count):
        task = Task.objects.create(
            external_id=f"{run_name}-task-{i}",
            repo="owner/repo",
            problem_statement="Fix it.",
            content_hash=f"{i:064d}",
        )
        group = Group.objects.create(step=step, task=task, content_hash=f"{i:064d}")
        for j in range(passing + 1):
            Attempt.objects.create(
                group=group,
                external_id=f"g{i}-a{j}",
                index=j,
                test_reward=1.0 if j < passing else 0.0,
                agent_system="sys",
            )
        groups.append(group)
    return groups


def complete_labels(assignment: Any, tier: str = "t1", *, score: int = 4, notes: str = "") -> None:
    """Every candidate of the assignment labelled completely (ranks 1, 2, … in display order)."""
    from review.models.reviewing import CRITERIA
    from review.services.reviewing import label_save

    for n, c in enumerate(assignment.candidates.order_by("position")):
        values = {"tier": tier, "rank_in_tier": n + 1, "mergeability": "as_is", "notes": notes}
        label_save(candidate=c, values=values | dict.fromkeys(CRITERIA, score))
