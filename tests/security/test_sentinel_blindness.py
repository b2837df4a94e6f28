"""Sentinels are blind: nothing a reviewer's browser receives marks a sentinel as a repeat.

A reviewer submits the sample group, then another group, and gets the sample group back as a
sentinel. Every page, fragment, JSON answer and header of the sentinel is fetched, as are those
of another reviewer's first review of the same group in the same state. Then:
- no sentinel response names the first review (its assignment id, any of its tokens);
  (the queue page's list of the reviewer's own submitted reviews links it, undistinguished, as
  it links every review they submitted;)
- no candidate keeps its alias, and the order differs;
- shown in the same order (another reviewer's first review is given the sentinel's aliases), the
  sentinel's responses are byte for byte the first review's, up to their own ids (assignment,
  tokens, CSRF, the user's name, times): there is nothing in one that the other lacks.
"""

from __future__ import annotations

import json
import re
from datetime import timedelta
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from grading.models import Group
from grading.services.demo import sample_load
from review.models import Assignment, Campaign
from review.models.reviewing import CRITERIA
from review.services.campaigns import campaign_create
from review.services.queue import assignment_next
from review.services.reviewing import review_submit
from tests.factories import UserFactory
from tests.review.blind import sequence_set
from tests.review.helpers import complete_labels, make_groups
from tests.security.test_identity_leaks import _urls_named_in

pytestmark = pytest.mark.django_db
JSON = {"HTTP_ACCEPT": "application/json"}
HOUR = timedelta(hours=1)
_TIME = re.compile(r"\d{4}-\d\d-\d\d[T ]\d\d:\d\d(:\d\d(\.\d+)?)?(\+00:00|Z)?")
_CSRF = re.compile(r'(csrfmiddlewaretoken" value=|csrftoken=|"csrfToken": ?)"?[A-Za-z0-9]+')


def _form(tier: str, rank: int) -> dict[str, object]:
    return {
        "tier": tier,
        "rank_in_tier": rank,
        "mergeability": "as_is",
        **dict.fromkeys(CRITERIA, 4),
    }


def _fetch_all(client: Client, assignment: Assignment) -> dict[str, str]:
    """Every response the review of `assignment` gets, keyed by what was asked (aliases, not
    tokens, so two reviews' keys line up by role)."""
    bodies: dict[str, str] = {}

    def record(what: str, response: Any) -> str:
        raw = b"".join(response.streaming_content) if response.streaming else response.content
        # Per response, not per review: the time, the session cookie and the request's own id.
        per_response = ("Date", "Set-Cookie", "X-Request-ID")
        headers = {k: v for k, v in response.headers.items() if k not in per_response}
        # The length counts the review's own ids too (assignment 9 in one review, 10 in the
        # other): checked to be the body's, then compared as the body is, after neutralising.
        if "Content-Length" in headers:
            assert int(headers.pop("Content-Length")) == len(raw), what
        bodies[what] = raw.decode("utf-8", "replace") + "\n" + json.dumps(headers, sort_keys=True)
        return bodies[what]

    page_url = reverse("review:page", args=[assignment.pk])
    page = record("page", client.get(page_url))
    candidates = list(assignment.candidates.order_by("position"))
    for n, c in enumerate(candidates):
        base = [assignment.pk, c.token]
        traj = reverse("review:trajectory", args=base)
        record(f"traj {c.alias}", client.get(traj, HTTP_X_FRAGMENT="1"))
        other = candidates[(n + 1) % len(candidates)]
        record(
            f"compare {c.alias}",
            client.get(
                reverse("review:compare", args=[assignment.pk]), {"a": c.token, "b": other.token}
            ),
        )
        record(
            f"label {c.alias}",
            client.post(reverse("review:label", args=base), _form("t2", n + 1), **JSON),
        )
    # The pages the review names, but the queue (checked apart: it lists the reviewer's own
    # submitted reviews, which differ between two reviewers).
    for url in sorted(_urls_named_in(page) - {"/", reverse("review:queue")}):
        record(f"GET {url}", client.get(url))
    record("submit", client.post(reverse("review:submit", args=[assignment.pk]), **JSON))
    record("page after", client.get(page_url))
    return bodies


def _neutral(text: str, assignment: Assignment) -> str:
    """`text` with this review's own identifiers (and times) replaced by placeholders."""
    text = text.replace(f"/a/{assignment.pk}/", "/a/ID/")
    for c in assignment.candidates.all():
        text = text.replace(c.token, f"TOKEN-{c.alias}")
    text = text.replace(assignment.reviewer.get_username(), "USER")
    text = _TIME.sub("TIME", text)
    return _CSRF.sub(r"\1CSRF", text)


def _align(fresh: Assignment, like: Assignment) -> None:
    """Give `fresh` the aliases and order of `like`, so the two reviews show the same thing."""
    target = {c.attempt_id: (c.alias, c.position) for c in like.candidates.all()}
    mine = list(fresh.candidates.all())
    for n, c in enumerate(mine):  # out of the way of the unique constraints first
        c.alias, c.position = f"~{n}", 1000 + n
        c.save(update_fields=["alias", "position"])
    for c in mine:
        c.alias, c.position = target[c.attempt_id]
        c.save(update_fields=["alias", "position"])


def test_nothing_the_browser_receives_marks_a_sentinel(client: Client) -> None:
    sample_load()
    sample = Group.objects.get(external_id="sample-humanize-lite-1024")
    (other,) = make_groups(1)
    alice, bob, carol = (UserFactory.create(username=n) for n in ("alice", "bobby", "carol"))
    campaign = campaign_create(
        name="Blind study",
        created_by=None,
        reviewers=[alice, bob, carol],
        filters={},
        overlap=2,
        sentinel_rate=0.5,
        reveal_policy=Campaign.Reveal.AFTER_SUBMISSION,
    )
    first = assignment_next(campaign=campaign, reviewer=alice)
    assert first.group_id == sample.pk
    complete_labels(first)
    review_submit(assignment=first)
    second = assignment_next(campaign=campaign, reviewer=alice)
    assert second.group_id == other.pk
    complete_labels(second)
    review_submit(assignment=second)
    # Carol fills the other group, so bob and alice each end with nothing left to take.
    now = timezone.now()
    Assignment.objects.create(
        campaign=campaign, group=other, reviewer=carol, started_at=now, expires_at=now + HOUR
    )

    client.force_login(alice)
    taken = client.post(reverse("review:next", args=[campaign.pk]))
    sentinel = Assignment.objects.get(reviewer=alice, sentinel=True)
    assert sentinel.group_id == sample.pk
    # The redirect names the new assignment only.
    assert taken["Location"] == reverse("review:page", args=[sentinel.pk])
    # The queue offers it as it offers any group in progress. (Alice's list of her own
    # submitted reviews links her first review too, undistinguished, as it always does.)
    queue = client.get(reverse("review:queue")).content.decode()
    assert f'href="{taken["Location"]}">Continue your review' in queue
    seen = _fetch_all(client, sentinel)

    # Bob's review gets an id one digit longer than alice's sentinel (9 and 10, as a long
    # test run reaches by itself now and then): the responses differ in length by as much.
    sequence_set(Assignment, 10 ** len(str(sentinel.pk)) - 1)
    client.force_login(bob)
    client.post(reverse("review:next", args=[campaign.pk]))
    fresh = Assignment.objects.get(reviewer=bob)
    assert fresh.group_id == sample.pk and not fresh.sentinel
    assert len(str(fresh.pk)) > len(str(sentinel.pk))
    _align(fresh, sentinel)
    baseline = _fetch_all(client, fresh)

    # Nothing of alice's first review reaches the sentinel's browser.
    everything = "\n".join(seen.values())
    assert f"/a/{first.pk}/" not in everything
    old_tokens = {c.token for c in first.candidates.all()}
    assert not [t for t in old_tokens if t in everything]
    assert "sentinel" not in everything.lower()
    # New aliases for every candidate, and so a new order.
    before = dict(first.candidates.values_list("attempt_id", "alias"))
    after = dict(sentinel.candidates.values_list("attempt_id", "alias"))
    assert before.keys() == after.keys() and len(after) >= 2
    assert all(after[a] != before[a] for a in after)
    # Shown in the same order, a sentinel and a first review get the same bytes, up to their
    # own ids: every page, fragment, JSON answer and header.
    mine = {k: _neutral(v, sentinel) for k, v in seen.items()}
    theirs = {k: _neutral(v, fresh) for k, v in baseline.items()}
    mine = {_neutral(k, sentinel): v for k, v in mine.items()}
    theirs = {_neutral(k, fresh): v for k, v in theirs.items()}
    assert mine.keys() == theirs.keys() and len(mine) > 20
    differ = [k for k in mine if mine[k] != theirs[k]]
    assert differ == [], [(k, _first_difference(mine[k], theirs[k])) for k in differ[:3]]


def _first_difference(a: str, b: str) -> str:
    n = next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b)))
    return f"{a[max(n - 80, 0) : n + 80]!r} vs {b[max(n - 80, 0) : n + 80]!r}"
