"""Identical patches are one candidate on the review page; nothing there says how many attempts
share a patch; the label applies to each of them. The reference solution stays hidden unless
the campaign shows it."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from grading.domain.bundle import group_from_object
from grading.models import Attempt, Group
from grading.services.imports import groups_import
from review.analytics.exports import labels_export
from review.models import Campaign
from review.models.reviewing import CRITERIA
from review.services.campaigns import campaign_create
from review.services.queue import assignment_next
from review.services.reviewing import label_save, review_submit
from tests.importers.helpers import PATCH, attempt, group
from tests.training.builders import BIG_PATCH

pytestmark = pytest.mark.django_db
GOLD = PATCH.replace("n >= 1", "n >= 1  # maintainers-fix-marker")


def bundle(task_id: str, patches: list[str], run: str) -> dict[str, Any]:
    obj = group(
        task_id,
        run=run,
        attempts=[
            attempt(f"a{i}", patch=p, agent={"system": f"sys-{i}", "model": "m", "family": "f"})
            for i, p in enumerate(patches)
        ],
    )
    obj["task"]["gold_patch"] = GOLD
    return obj


def import_one(obj: dict[str, Any]) -> Group:
    report = groups_import(records=[group_from_object(obj, source="t")])
    assert report.ok, report.problems
    return Group.objects.get(pk=report.results[0].group_id)


def campaign_for(g: Group, reviewer: Any, **options: Any) -> Campaign:
    return campaign_create(
        name=f"c-{g.pk}-{len(options)}",
        created_by=None,
        reviewers=[reviewer],
        filters={"run": g.step.run_id},
        **options,
    )


def page(client: Client, reviewer: Any, campaign: Campaign) -> tuple[Any, str]:
    assignment = assignment_next(campaign=campaign, reviewer=reviewer)
    client.force_login(reviewer)
    html = client.get(reverse("review:page", args=[assignment.pk])).content.decode()
    return assignment, html


def what_a_reviewer_learns(html: str) -> list[str]:
    """Everything on the page that counts or compares candidates, in order."""
    summaries = re.findall(r"Shared changes: [^<]*", html)
    badges = re.findall(r'<span class="rv-badge">([^<]*)</span>', html)
    totals = re.findall(r"How many of the \d+ candidates", html)
    heads = re.findall(r"\d+ candidates? ·", html)
    return sorted(summaries) + sorted(badges) + totals + heads


def test_identical_patches_are_one_candidate_and_the_page_cannot_tell(client, reviewer):
    dup = import_one(bundle("t-dup", [PATCH, BIG_PATCH, PATCH, BIG_PATCH, BIG_PATCH], "r-dup"))
    single = import_one(bundle("t-one", [PATCH, BIG_PATCH], "r-one"))
    a_dup, html_dup = page(client, reviewer, campaign_for(dup, reviewer))
    _, html_single = page(client, reviewer, campaign_for(single, reviewer))

    shown = sorted(a_dup.candidates.values_list("attempt__external_id", flat=True))
    assert shown == ["a0", "a1"]  # the first attempt of each distinct patch
    assert html_dup.count('<section class="rv-panel') == 2
    # The same page as for a group where each patch was submitted once.
    assert what_a_reviewer_learns(html_dup) == what_a_reviewer_learns(html_single)
    assert what_a_reviewer_learns(html_dup)  # (the comparison is not vacuous)
    # No agent's name, and no word about sharing (tokens are random, so
    # whole words only).
    for hint in (*(f"sys-{i}" for i in range(5)), "attempts", "identical", "duplicate"):
        assert not re.search(rf"(?<![\w-]){hint}(?![\w-])", html_dup), hint


def test_a_label_applies_to_every_attempt_with_the_patch(client, reviewer, tmp_path):
    dup = import_one(bundle("t-dup", [PATCH, BIG_PATCH, PATCH, BIG_PATCH, BIG_PATCH], "r-dup"))
    assignment = assignment_next(campaign=campaign_for(dup, reviewer), reviewer=reviewer)
    first = Attempt.objects.get(external_id="a0").patch_id
    for c in assignment.candidates.all():
        tier = "t1" if c.attempt.patch_id == first else "t2"
        values = {"tier": tier, "rank_in_tier": 1, "mergeability": "as_is"}
        label_save(candidate=c, values=values | dict.fromkeys(CRITERIA, 4))
    review_submit(assignment=assignment)
    labels_export(fmt="jsonl", out_dir=tmp_path)
    rows = [json.loads(x) for x in (tmp_path / "labels.jsonl").read_text().splitlines()]
    by_attempt = {
        Attempt.objects.get(pk=r["attempt_db_id"]).external_id: [
            h["tier"] for h in r["human_tiers"]
        ]
        for r in rows
    }
    assert by_attempt == {"a0": [1], "a2": [1], "a1": [2], "a3": [2], "a4": [2]}
    consensus = {r["attempt_id"]: (r["n_reviews"], r["consensus_tier"]) for r in rows}
    assert consensus == {"a0": (1, 1), "a2": (1, 1), "a1": (1, 2), "a3": (1, 2), "a4": (1, 2)}


def test_the_reference_solution_is_hidden_unless_the_campaign_shows_it(client, reviewer):
    g = import_one(bundle("t-ref", [PATCH, BIG_PATCH], "r-ref"))
    hidden = campaign_for(g, reviewer)
    assert hidden.show_reference is False  # off by default
    _, html = page(client, reviewer, hidden)
    assert "maintainers-fix-marker" not in html and "Reference solution" not in html

    shown = campaign_for(g, reviewer, show_reference=True)
    assert Campaign.objects.get(pk=shown.pk).show_reference is True  # recorded on the campaign
    _, html = page(client, reviewer, shown)
    assert "Reference solution" in html and "not a candidate" in html
    assert "maintainers-fix-marker" in html


def test_staff_turn_the_reference_solution_on_when_creating_a_campaign(client, reviewer, staff):
    g = import_one(bundle("t-form", [PATCH], "r-form"))
    client.force_login(staff)
    form = client.get(reverse("review:staff-new")).content.decode()
    assert 'name="show_reference"' in form and "Show reference solution" in form
    base = {
        "run": g.step.run_id, "reviewers": [reviewer.pk], "overlap": 1,
        "reveal_policy": "never", "lease_minutes": 60,
    }  # fmt: skip
    client.post(reverse("review:staff-new"), base | {"name": "off"})
    client.post(reverse("review:staff-new"), base | {"name": "on", "show_reference": "on"})
    assert dict(Campaign.objects.values_list("name", "show_reference")) == {
        "off": False,
        "on": True,
    }
    detail = client.get(reverse("review:staff-detail", args=[Campaign.objects.get(name="on").pk]))
    assert "reference solution: shown" in detail.content.decode()
