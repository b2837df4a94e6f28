"""The hostile-text corpus (tests/security/hostile_text.py) through every page that shows it:
the reviewer's pages (review page, trajectory fragments and page, search, compare, file pages),
the staff pages (campaigns, adjudication, dashboards) and the admin (lists and change pages of
tasks, groups, attempts, patches, trajectories, grader runs and what reviewers wrote). No page's
text holds a control, bidi or zero-width character raw, test output keeps no colour sequence,
and file names and identifiers that mix alphabets are warned about where they are shown.

The same corpus in real Chromium: tests/browser/test_hostile_text_browser.py.
"""

from __future__ import annotations

import html
import re

import pytest
from django.contrib import admin
from django.test import Client
from django.urls import reverse

from grading.models import Attempt, CandidateGrade, GraderEvent, Patch, Trajectory
from review.models import FixRequest, Label
from tests.review.helpers import with_panel_fragments
from tests.security.hostile_text import (
    ANSI_TEST_OUTPUT,
    hostile_text_world,
    raw_in,
    shown_text,
)

pytestmark = pytest.mark.django_db
_URL_ATTR = re.compile(r"""(?:href|src|data-[a-z-]*(?:url|src))="(/[^"#]*)""")


def _check(pages: dict[str, str]) -> None:
    raw = {url: raw_in(shown_text(body)) for url, body in pages.items()}
    assert {url: found for url, found in raw.items() if found} == {}
    coloured = [url for url, body in pages.items() if ANSI_TEST_OUTPUT[1:] in body]
    assert coloured == [], "test output keeps its colour sequences"


def test_the_reviewers_pages_show_no_hostile_character_raw(client: Client) -> None:
    assignment, _, _ = hostile_text_world()
    client.force_login(assignment.reviewer)
    pages: dict[str, str] = {}

    def get(url: str, **extra: str) -> str:
        response = client.get(url, **extra)
        assert response.status_code == 200, url
        pages[url + "".join(extra)] = body = response.content.decode()
        return body

    page = get(reverse("review:page", args=[assignment.pk]))
    # The other candidates' panels, as the page script fetches them (checked like the page).
    page = pages["panels"] = with_panel_fragments(client, assignment, page)
    for c in assignment.candidates.order_by("position"):
        traj = reverse("review:trajectory", args=[assignment.pk, c.token])
        get(traj, HTTP_X_FRAGMENT="1")
        get(traj)
        get(traj + "?q=evil")
    compare = get(reverse("review:compare", args=[assignment.pk]))
    for url in sorted({html.unescape(u) for u in _URL_ATTR.findall(page)} - {"/accounts/logout/"}):
        if "/file" in url or "/trajectory" in url:  # the GET fragments it names
            get(url)
    _check(pages)
    shown = shown_text(page)
    assert "␛" in shown and "⟨U+202E⟩" in shown and "⟨U+200B⟩" in shown and "boom" in shown
    # File names and identifiers that mix alphabets: warned next to the file and the line.
    assert "this file name mixes alphabets" in shown
    assert "mixes alphabets: l\u0430bel_id (Latin + Cyrillic)" in shown
    assert page.count('class="d-mixed"') >= 3  # one added line per candidate
    assert "mixes alphabets" in shown_text(compare)


def test_staff_pages_show_no_hostile_character_raw(client: Client) -> None:
    assignment, flag, _ = hostile_text_world()
    client.force_login(assignment.campaign.created_by)
    urls = [
        reverse("review:staff-list"),
        reverse("review:staff-detail", args=[assignment.campaign_id]),
        reverse("review:adjudication-list"),
        reverse("review:adjudication-detail", args=[flag.pk]),
    ]
    pages = {}
    for url in urls:
        response = client.get(url)
        assert response.status_code == 200, url
        pages[url] = response.content.decode()
    _check(pages)
    assert "␛" in shown_text(pages[urls[-1]])


def test_admin_pages_show_no_hostile_character_raw(client: Client) -> None:
    assignment, flag, run = hostile_text_world()
    client.force_login(assignment.campaign.created_by)
    objects = [
        assignment.group.task,
        assignment.group,
        *Attempt.objects.filter(group=assignment.group),
        *Patch.objects.filter(attempts__group=assignment.group).distinct(),
        *Trajectory.objects.filter(attempt__group=assignment.group),
        run,
        *CandidateGrade.objects.filter(run=run),
        *GraderEvent.objects.filter(run=run),
        assignment,
        *Label.objects.all(),
        *FixRequest.objects.all(),
        flag,
    ]
    urls = ["/admin/"]
    for obj in objects:
        if not admin.site.is_registered(type(obj)):
            continue  # shown inline on its parent's page
        meta = obj._meta
        urls.append(reverse(f"admin:{meta.app_label}_{meta.model_name}_changelist"))
        urls.append(reverse(f"admin:{meta.app_label}_{meta.model_name}_change", args=[obj.pk]))
    pages = {}
    for url in dict.fromkeys(urls):
        response = client.get(url)
        assert response.status_code == 200, url
        pages[url] = response.content.decode()
    _check(pages)
    attempt = pages[reverse("admin:grading_attempt_change", args=[objects[2].pk])]
    assert "␛" in shown_text(attempt) and "boom" in attempt
