"""A system prompt is an identity mark with no name in it: each agent family's harness sends its
own wording ("You are a careful coding assistant…", "SYSTEM: Repository at /testbed. Tools: …"),
the same in every attempt it makes, so a reviewer who has seen it once can group candidates by
agent. The reviewer's trajectory (page, fragment and search) withholds it whole."""

from __future__ import annotations

import html
import io
import json

import pytest
from django.test import Client
from django.urls import reverse

from grading.models import Group
from grading.services.imports import groups_import
from grading.services.sources import bundle_records
from review.blinded_cache import SYSTEM_PROMPT_WITHHELD
from review.models import Assignment, Campaign
from review.services.campaigns import campaign_create
from tests.factories import StaffFactory, UserFactory
from tests.security.identity_marks import GROUP_ID, hostile_record

pytestmark = pytest.mark.django_db

# Two families' prompts: nothing the redactor could know to take out.
PROMPTS = (
    "You are a meticulous maintainer. Think in numbered steps; finish with DONE-QX7.",
    "SYSTEM: Repository at /testbed. Tools: open, edit, run. Budget: 40 turns (Lorvane rules).",
)
MARKS = ("meticulous maintainer", "DONE-QX7", "Repository at /testbed", "Lorvane")


def _group() -> Group:
    record = hostile_record()
    for n, attempt in enumerate(record["attempts"]):
        events = attempt["trajectory"]["events"]
        events[0] = {"kind": "message", "role": "system", "text": PROMPTS[n % 2]}
        events[1] = {"kind": "message", "role": "user", "text": "Fix format_bytes(1024)."}
    line = json.dumps(record) + "\n"
    _, records = bundle_records(stream=io.BytesIO(line.encode()), source="t", base_dir=None)
    groups_import(records=records)
    return Group.objects.get(external_id=GROUP_ID)


def test_the_reviewer_never_receives_a_system_prompt(client: Client) -> None:
    _group()
    reviewer = UserFactory.create(username="alice")
    campaign = campaign_create(
        name="Prompts", created_by=StaffFactory.create(username="lead"), reviewers=[reviewer],
        filters={}, reveal_policy=Campaign.Reveal.AFTER_SUBMISSION,
    )  # fmt: skip
    client.force_login(reviewer)
    client.post(reverse("review:next", args=[campaign.pk]))
    mine = Assignment.objects.get(reviewer=reviewer)
    bodies = []
    for c in mine.candidates.all():
        url = reverse("review:trajectory", args=[mine.pk, c.token])
        pages = [client.get(url), client.get(url, HTTP_X_FRAGMENT="1")]
        pages += [client.get(url, {"q": q}, HTTP_X_FRAGMENT="1")
                  for q in ("meticulous", "Tools:", "system", "DONE")]  # fmt: skip
        bodies += [html.unescape(p.content.decode()) for p in pages]
    assert bodies and all("Fix format_bytes(1024)." in b for b in bodies[::6])
    seen = [m for m in MARKS for b in bodies if m.casefold() in b.casefold()]
    assert not seen, seen
    # The event is still there (the reviewer sees where the prompt was), its text is not.
    assert all(SYSTEM_PROMPT_WITHHELD in b for b in bodies[::6])
