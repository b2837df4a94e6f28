"""The review page's panels from cold and warm caches: each panel is its own candidate's, and
the cached pieces are keyed by everything they depend on (the redaction rules included).

The page's read leaves the patches' text out (review.selectors.reviewing) and the renderer
loads the texts it needs in one query (review.blinded_cache.redacted_texts): a text must never
land on another candidate's patch.
"""

from __future__ import annotations

import hashlib
import re

import pytest
from django.core.cache import cache
from django.urls import reverse

from grading.models import Attempt, Group, Patch, Run, Step, Task
from review.services.campaigns import campaign_create
from review.services.queue import assignment_next

CSRF = re.compile(r'name="csrfmiddlewaretoken" value="[^"]*"')
# Each candidate's agent and model, and a line only its own patch holds. Three, so that the
# shared changes (computed after the first panel's own diff) load two texts in one query.
AGENTS = {
    0: ("quillforge-agent", "quillforge-large-9b", "only_in_first = 'alpha'"),
    1: ("brambleloop", "brambleloop-coder-3b", "only_in_second = 'beta'"),
    2: ("thistlebot", "thistlebot-7b-2026", "only_in_third = 'gamma'"),
}


def _patch(i: int) -> str:
    system, model, own = AGENTS[i]
    return (
        "diff --git a/m.py b/m.py\n--- a/m.py\n+++ b/m.py\n@@ -1,2 +1,4 @@\n"
        f" keep = 1\n-old = {i}\n+{own}\n+# written with {system} running {model}\n"
        f"+tag = 'secretword{i}'\n"
    )


def _group(name: str) -> Group:
    run = Run.objects.create(name=name)
    step = Step.objects.create(run=run, number=1)
    task = Task.objects.create(
        external_id=name, repo="o/r", problem_statement="p", content_hash="0" * 64
    )
    group = Group.objects.create(step=step, task=task, content_hash="0" * 64)
    for i, (system, model, _own) in AGENTS.items():
        data = _patch(i).encode()
        patch = Patch.objects.create(
            sha256=hashlib.sha256(data).hexdigest(), content=data, size=len(data)
        )
        Attempt.objects.create(
            group=group,
            external_id=f"{name}-{i}",
            index=i,
            test_reward=1.0,
            patch=patch,
            agent_system=system,
            agent_model=model,
        )
    return group


def _panels(client, assignment) -> dict[str, str]:
    """Each candidate's panel fragment, by the text only its own patch holds."""
    out = {}
    for c in assignment.candidates.all():
        url = reverse("review:panel", args=[assignment.pk, c.token])
        html = client.get(url, HTTP_X_FRAGMENT="1").content.decode()
        # Django masks the CSRF token afresh in every response.
        out[AGENTS[c.attempt.index][2].split()[0]] = CSRF.sub("", html)
    return out


@pytest.mark.django_db
@pytest.mark.parametrize("order", ["page first", "panels cold"])
def test_each_panel_shows_its_own_patch_and_no_identity(client, reviewer, order):
    group = _group(f"panel-cache-{order.replace(' ', '-')}")
    campaign = campaign_create(
        name=f"pc {order}",
        created_by=None,
        reviewers=[reviewer],
        filters={"run": group.step.run_id},
    )
    assignment = assignment_next(campaign=campaign, reviewer=reviewer)
    client.force_login(reviewer)
    cache.clear()
    if order == "page first":
        # The page renders the shared changes over every patch (all texts in one query).
        assert client.get(reverse("review:page", args=[assignment.pk])).status_code == 200
    cold = _panels(client, assignment)
    warm = _panels(client, assignment)
    assert cold == warm  # the same bytes from cold and warm caches
    for own, html in cold.items():
        assert own in html
        assert not [o for o in cold if o != own and o in html]  # never another one's patch
        for system, model, _ in AGENTS.values():
            assert system not in html and model not in html
            assert system.split("-")[0] not in html.lower()


@pytest.mark.django_db
def test_the_cached_pieces_follow_the_campaigns_redaction_rules(client, reviewer, other_reviewer):
    # Two campaigns on the same group and patches, the second with a fingerprint pattern: its
    # panels are rendered for its rules, never served from the first campaign's cache.
    group = _group("panel-cache-rules")
    plain = campaign_create(
        name="plain", created_by=None, reviewers=[reviewer], filters={"run": group.step.run_id}
    )
    strict = campaign_create(
        name="strict",
        created_by=None,
        reviewers=[other_reviewer],
        filters={"run": group.step.run_id},
        fingerprint_patterns=r"secretword\d",
    )
    cache.clear()
    first = assignment_next(campaign=plain, reviewer=reviewer)
    client.force_login(reviewer)
    assert client.get(reverse("review:page", args=[first.pk])).status_code == 200
    assert all("secretword" in html for html in _panels(client, first).values())

    second = assignment_next(campaign=strict, reviewer=other_reviewer)
    client.force_login(other_reviewer)
    page = client.get(reverse("review:page", args=[second.pk])).content.decode()
    assert "secretword" not in page
    for html in _panels(client, second).values():
        assert "secretword" not in html
        assert "[redacted]" in html
