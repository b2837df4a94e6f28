"""What a reviewer recorded is shown in the admin, never written there: an edit would skip the
rules Submit checks and leave no trail of who changed a reviewer's label (QA: a locked T3 label
saved as "exploit" with rank 42). A review is redone by deleting its assignment."""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from review.models import Assignment, FixRequest, Label
from tests.analytics.factories import make_study, review_group
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def root(client: Client) -> Client:
    client.force_login(UserFactory(username="root", is_staff=True, is_superuser=True))
    return client


@pytest.fixture
def submitted() -> Assignment:
    study = make_study(1, 3, reviewers=1)
    review_group(study.campaign, study.groups[0], study.attempts[0], study.reviewers[0],
                 ["t1", "t2", "t3"])  # fmt: skip
    assignment = Assignment.objects.get()
    assert assignment.status == Assignment.Status.SUBMITTED
    FixRequest.objects.create(candidate=assignment.candidates.all()[0], path="a.py", line=1,
                              side="new", text="why?", severity="nit", active_ms_before=0,
                              created_at=timezone.now())  # fmt: skip
    return assignment


def test_a_label_is_shown_but_not_changed_added_or_deleted(root: Client, submitted: Assignment):
    label = Label.objects.filter(candidate__assignment=submitted).order_by("tier").last()
    before = (label.tier, label.rank_in_tier)
    page = root.get(reverse("admin:review_label_change", args=[label.pk]))
    assert page.status_code == 200 and b"Save" not in page.content  # a view page
    edit = {"candidate": label.candidate_id, "tier": "exploit", "rank_in_tier": 42}
    changed = root.post(reverse("admin:review_label_change", args=[label.pk]), edit)
    assert changed.status_code == 403
    label.refresh_from_db()
    assert (label.tier, label.rank_in_tier) == before
    assert root.get(reverse("admin:review_label_add")).status_code == 403
    assert root.post(reverse("admin:review_label_delete", args=[label.pk]),
                     {"post": "yes"}).status_code == 403  # fmt: skip
    listing = root.post(reverse("admin:review_label_changelist"),
                        {"action": "delete_selected", "_selected_action": [str(label.pk)],
                         "post": "yes"})  # fmt: skip
    assert listing.status_code in (200, 302, 403)
    assert Label.objects.filter(pk=label.pk).exists()


def test_a_fix_request_is_shown_but_not_written(root: Client, submitted: Assignment):
    fix = FixRequest.objects.get()
    url = reverse("admin:review_fixrequest_change", args=[fix.pk])
    assert root.get(url).status_code == 200
    assert root.post(url, {"text": "edited", "path": "a.py", "line": 1}).status_code == 403
    assert FixRequest.objects.get().text == "why?"
    assert root.get(reverse("admin:review_fixrequest_add")).status_code == 403


def test_a_submitted_assignment_keeps_its_reviewer_status_and_time(
    root: Client, submitted: Assignment
):
    other = UserFactory.create(username="mallory")
    url = reverse("admin:review_assignment_change", args=[submitted.pk])
    form = root.get(url)
    assert form.status_code == 200
    post = {
        "campaign": submitted.campaign_id,
        "group": submitted.group_id,
        "reviewer": other.pk,
        "status": Assignment.Status.IN_PROGRESS,
        "active_ms": 1,
        "candidates-TOTAL_FORMS": 0,
        "candidates-INITIAL_FORMS": 0,
    }
    root.post(url, post)
    again = Assignment.objects.get(pk=submitted.pk)
    assert (again.reviewer_id, again.status, again.active_ms) == (
        submitted.reviewer_id,
        Assignment.Status.SUBMITTED,
        submitted.active_ms,
    )
    assert root.get(reverse("admin:review_assignment_add")).status_code == 403
