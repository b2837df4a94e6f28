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


def added_line(candidate: Any) -> dict[str, Any]:
    """An anchor a fix request may use: the first added line of the candidate's diff."""
    from review.diffs import parse_patch

    for f in parse_patch(candidate.attempt.patch.text):
        for hunk in f.hunks:
            for ln in hunk.lines:
                if ln.kind == "+":
                    return {"path": f.path, "line": ln.new_no, "side": "new"}
    raise AssertionError("the candidate adds no line")


def with_panel_fragments(client: Any, assignment: Any, page: str) -> str:
    """The review page plus the panel fragment of every candidate whose panel is not in it (the
    page brings only the active candidate's; the script fetches the others when opened)."""
    import re

    from django.urls import reverse

    shells = re.findall(
        r'<section class="rv-panel(?: is-current)?"[^>]*data-token="([^"]+)"([^>]*)>', page
    )
    for token, rest in shells:
        if "data-loaded" in rest:
            continue
        url = reverse("review:panel", args=[assignment.pk, token])
        response = client.get(url, HTTP_X_FRAGMENT="1")
        assert response.status_code == 200, url
        page += response.content.decode()
    return page
