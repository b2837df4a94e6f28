"""The leak test: a reviewer of the project's hostile group (tests/security/identity_marks.py)
fetches every page, fragment and XHR the review pages use, and every same-origin URL those
pages name, before and after submitting with the grader's verdict revealed; no byte of any
response holds a planted identity mark, in any case or separator style.

The browser half (real Chromium, every response the pages load) is in
tests/browser/test_identity_leaks_browser.py; both use the same corpus and the same grep.
"""

from __future__ import annotations

import html
import json
import re
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from grading.models import GraderConfig, GraderRun, Group
from review.models import Assignment, Campaign
from review.models.reviewing import CRITERIA
from review.selectors.claims import candidate_claims
from review.services.campaigns import campaign_create
from tests.factories import StaffFactory, UserFactory
from tests.security.identity_marks import MARKS, SIGNATURE, hostile_group_import, marks_in

pytestmark = pytest.mark.django_db
JSON = {"HTTP_ACCEPT": "application/json"}
_URL_ATTR = re.compile(r"""(?:href|src|action|data-[a-z-]*(?:url|src))="(/[^"#]*)""")


def grader_run_with_marks(group: Group) -> GraderRun:
    """A succeeded grader run whose text quotes the agents' marks, as a real model would."""
    config, _ = GraderConfig.objects.get_or_create(
        name="leak-test-grader", defaults={"backend": "heuristic", "model": "grader-m"}
    )
    passing = [a for a in group.attempts.order_by("index") if a.passed]
    # Code evidence on the agent's own files, by their real names (the claims drawn on the
    # diff after the reveal must name them as the redacted diff does).
    evidence = {
        f"E{n}{k}": {
            "type": "code",
            "candidate": str(a.pk),
            "path": path,
            "line_start": 1,
            "line_end": 1,
            "side": "post",
        }
        for n, a in enumerate(passing)
        for k, path in enumerate(("CLAUDE.md", f"humanize_lite/boundary_{n}.py"))
    }
    run = GraderRun.objects.create(
        group=group,
        config=config,
        status=GraderRun.Status.SUCCEEDED,
        verdict={
            "candidates": {
                str(a.pk): {"tier": 1, "evidence": [f"E{n}1"]} for n, a in enumerate(passing)
            },
            "evidence": evidence,
        },
    )
    for n, a in enumerate(passing):
        run.grades.create(
            attempt=a,
            tier=1,
            rank_in_tier=n + 1,
            weighted_score=4.0,
            scores={
                c: {
                    "score": 4,
                    "rationale": f"the {SIGNATURE} comment is noise",
                    "evidence": [f"E{n}0", f"E{n}1"],
                }
                for c in CRITERIA
            },
            severe_issues=[
                {"category": "other", "description": "commits CLAUDE.md and .cursorrules"}
            ],
            summary="Written by zephyrix-harness; says I'm Brightfield-Coder-12B, an AI model.",
        )
    return run


def _complete_form(rank: int) -> dict[str, object]:
    return {
        "tier": "t1",
        "rank_in_tier": rank,
        "mergeability": "as_is",
        **dict.fromkeys(CRITERIA, 4),
    }


def _urls_named_in(body: str) -> set[str]:
    return {html.unescape(u) for u in _URL_ATTR.findall(body)} - {"/accounts/logout/"}


def test_no_planted_identity_mark_reaches_the_reviewer(client: Client) -> None:
    group = hostile_group_import()
    grader_run_with_marks(group)
    reviewer = UserFactory.create(username="alice")
    campaign = campaign_create(
        name="Leak test",
        created_by=StaffFactory.create(username="lead"),
        reviewers=[reviewer],
        filters={},
        reveal_policy=Campaign.Reveal.AFTER_SUBMISSION,
    )
    bodies: dict[str, str] = {}

    def record(what: str, response: Any) -> str:
        raw = b"".join(response.streaming_content) if response.streaming else response.content
        text = raw.decode("utf-8", "replace")
        bodies[what] = text + json.dumps(dict(response.headers))
        return text

    client.force_login(reviewer)
    record("home", client.get("/", follow=True))
    record("queue", client.get(reverse("review:queue")))
    record("next", client.post(reverse("review:next", args=[campaign.pk]), follow=True))
    mine = Assignment.objects.get(reviewer=reviewer)
    page_url = reverse("review:page", args=[mine.pk])
    page = record("page", client.get(page_url))
    candidates = list(mine.candidates.order_by("position"))
    assert len(candidates) == 3
    for n, c in enumerate(candidates):
        base = [mine.pk, c.token]
        # Each candidate's panel, as the page script fetches it when its tab is opened.
        panel = record(
            f"panel {n}", client.get(reverse("review:panel", args=base), HTTP_X_FRAGMENT="1")
        )
        page += panel
        traj = reverse("review:trajectory", args=base)
        record(f"traj fragment {n}", client.get(traj, HTTP_X_FRAGMENT="1"))
        record(f"traj page {n}", client.get(traj))
        for q in ("redacted", "agent-file", "You are", "model", "Generated", "I'm"):
            record(f"traj search {n} {q}", client.get(traj, {"q": q}, HTTP_X_FRAGMENT="1"))
        other = candidates[(n + 1) % len(candidates)]
        record(
            f"compare {n}",
            client.get(reverse("review:compare", args=[mine.pk]), {"a": c.token, "b": other.token}),
        )
        record(
            f"label {n}",
            client.post(reverse("review:label", args=base), _complete_form(n + 1), **JSON),
        )
        fix = {"path": "agent-file-1", "line": 1, "side": "new", "text": "why?", "severity": "nit"}
        fixed = client.post(reverse("review:fix", args=base), fix, **JSON)
        record(f"fix {n}", fixed)
        assert fixed.status_code == 200, fixed.content  # the neutral name is a real file
    # Every URL the page names (file pages, fragments, links), fetched as this reviewer.
    named = set()
    for what in [k for k in bodies if k.startswith(("page", "panel", "compare", "traj page"))]:
        named |= _urls_named_in(bodies[what])
    assert named, "the review page names no URL"
    for url in sorted(named):
        record(f"GET {url}", client.get(url))
    # Before submission the grader's claims do not exist for this reviewer: no claim on the
    # page, and marking one (by the handle it will have after the reveal) is not found.
    assert "rv-claim" not in page
    run = GraderRun.objects.get(group=mine.group, config__name="leak-test-grader")
    for n, c in enumerate(candidates):
        handles = [cc.handle for cc in candidate_claims(run=run, candidates=[c])]
        assert handles
        early = client.post(
            reverse("review:claim", args=[mine.pk, c.token]),
            {"claim": handles[0], "mark": "correct"},
            **JSON,
        )
        assert early.status_code == 404
        record(f"claim before submit {n}", early)
    record("submit", client.post(reverse("review:submit", args=[mine.pk]), **JSON))
    after = record("page after", client.get(page_url))
    # The other candidates' panels after the reveal, as the page script fetches them.
    shown = re.search(
        r'<section class="rv-panel(?: is-current)?"[^>]*data-token="([^"]+)"[^>]*data-loaded', after
    )
    assert shown
    for n, c in enumerate(candidates):
        if c.token == shown.group(1):
            continue
        url = reverse("review:panel", args=[mine.pk, c.token])
        after += record(f"panel after {n}", client.get(url, HTTP_X_FRAGMENT="1"))
    assert "GRADER" not in page and "Brightfield" not in after
    # The grader's claims, marked after the reveal: each form's answer too.
    forms = re.findall(
        r'<form method="post" action="([^"]+)" class="rv-claim-form">'
        r'.*?name="claim" value="([^"]+)"',
        after,
        flags=re.S,
    )
    assert len(forms) >= 3 * len(CRITERIA), "no grader claim after the reveal"
    # A claim on the agent's memory file names it as the diff does, so it can be drawn there.
    assert re.search(r'class="rv-claim"[^>]*data-path="agent-file-\d+"', after)
    for n, (action, handle) in enumerate(forms):
        marked = client.post(html.unescape(action), {"claim": handle, "mark": "wrong"}, **JSON)
        assert marked.status_code == 200, marked.content
        record(f"claim mark {n}", marked)
    record("page after marks", client.get(page_url))
    for url in sorted(_urls_named_in(after) - named):
        record(f"GET after {url}", client.get(url))

    leaked = {what: marks_in(body) for what, body in bodies.items()}
    assert {what: found for what, found in leaked.items() if found} == {}
    # What was redacted is still there to judge: the code, the agent files as neutral files.
    assert "boundary_" in page and "agent-file-1" in page and "[redacted]" in page
    assert "this fixes the boundary" in page and "Project memory for" in page
    assert "[redacted]" in bodies["traj fragment 0"] and "agent-file-" in bodies["traj fragment 0"]
    assert len(MARKS) >= 20
