"""A base file the group's candidates share is lexed once for the group, across the separate
requests that render each candidate's panel (the shared cache), with the same HTML."""

import difflib
import hashlib
import subprocess

import pytest
from django.core.cache import cache
from django.urls import reverse

from grading.diffs import parse_patch
from grading.models import Attempt, Group, Patch, Run, Step, Task
from review.blinded_cache import assignment_redactor, rendered_diffs
from review.diffs import render_file
from review.diffs.lexing import LEX_STATS
from review.services.campaigns import campaign_create
from review.services.queue import assignment_next

pytestmark = pytest.mark.django_db

BASE = [f"value_{i} = compute({i})" for i in range(200)]


def _patch(k: int) -> str:
    # Each candidate changes a different line, and one of them opens a docstring (a change of
    # lexer state that the lines below it must follow).
    new = list(BASE)
    new[40 * k + 5] = f"value_{40 * k + 5} = compute(-{k})"
    if k == 1:
        new.insert(150, '"""')
    body = "".join(
        difflib.unified_diff([f"{x}\n" for x in BASE], [f"{x}\n" for x in new], "a/m.py", "b/m.py")
    )
    return "diff --git a/m.py b/m.py\n" + body


def _group(tmp_path) -> Group:
    (tmp_path / "m.py").write_text("\n".join(BASE) + "\n")
    git = ["git", "-C", str(tmp_path), "-c", "user.name=t", "-c", "user.email=t@example.invalid"]
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "base"]):
        subprocess.run([*git, *args], check=True, capture_output=True)
    commit = subprocess.run(
        [*git, "rev-parse", "HEAD"], check=True, capture_output=True, text=True
    ).stdout.strip()
    run = Run.objects.create(name="shared-base")
    step = Step.objects.create(run=run, number=0)
    task = Task.objects.create(
        external_id="shared-base",
        repo="o/r",
        problem_statement="p",
        content_hash="0" * 64,
        source_status="found",
        source_path=str(tmp_path),
        base_commit=commit,
    )
    group = Group.objects.create(step=step, task=task, content_hash="0" * 64)
    for k in range(3):
        data = _patch(k).encode()
        patch = Patch.objects.create(
            sha256=hashlib.sha256(data).hexdigest(), content=data, size=len(data)
        )
        Attempt.objects.create(
            group=group, external_id=f"c{k}", index=k, test_reward=1.0, patch=patch
        )
    return group


def test_the_panels_lex_a_shared_base_once_and_render_as_without_sharing(
    client, reviewer, tmp_path
):
    group = _group(tmp_path)
    campaign = campaign_create(
        name="shared", created_by=None, reviewers=[reviewer], filters={"run": group.step.run_id}
    )
    assignment = assignment_next(campaign=campaign, reviewer=reviewer)
    candidates = list(assignment.candidates.select_related("attempt__patch"))
    client.force_login(reviewer)

    cache.clear()
    LEX_STATS.clear()
    assert client.get(reverse("review:page", args=[assignment.pk])).status_code == 200
    for c in candidates:
        url = reverse("review:panel", args=[assignment.pk, c.token])
        assert client.get(url, HTTP_X_FRAGMENT="1").status_code == 200
    # One base file, three candidates in separate requests: lexed from the start once; each
    # new side only around its change (and below the docstring it opens).
    assert LEX_STATS["sides"] == 1
    assert LEX_STATS["lines"] < len(BASE) + 3 * 10 + (len(BASE) - 150)

    redactor = assignment_redactor(assignment=assignment)
    task = group.task
    base = "\n".join(BASE) + "\n"
    for c in candidates:
        shared = rendered_diffs(patches={c.token: c.attempt.patch}, redactor=redactor, task=task)
        (file,) = parse_patch(c.attempt.patch.text)
        assert [f.html for f in shared[c.token]] == [render_file(file, old_text=base).html]
        assert "Show " in shared[c.token][0].html  # rendered against the whole base file
