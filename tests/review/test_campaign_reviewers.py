"""Who may review a campaign, from the staff form and the admin: never a service account (its API
tokens would stop working, silently stopping the training loop), k no larger than the number
of reviewers, and staff (who can read grader verdicts) only when chosen knowingly."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.core.exceptions import ValidationError
from django.test import Client

from grading.models import Group
from grading.services.tokens import api_token_create
from review.admin import CampaignAdminForm
from review.models import Campaign
from review.services.campaigns import campaign_create
from tests.factories import ServiceAccountFactory, StaffFactory

pytestmark = pytest.mark.django_db
NEW = "/review/staff/new"


def _post(client: Client, **changes: Any) -> Any:
    data = {
        "name": "From the form",
        "reviewers": [],
        "overlap": 1,
        "reveal_policy": "after_submission",
        "lease_minutes": 60,
        **changes,
    }
    return client.post(NEW, data)


@pytest.fixture
def loop(db):
    """The training loop's service account, with a working token."""
    svc = ServiceAccountFactory.create(username="training-loop")
    api_token_create(user=svc, name="loop", scopes=["read"])
    return svc


def test_the_form_never_offers_a_service_account(client, staff, reviewer, loop, sample_group):
    client.force_login(staff)
    page = client.get(NEW).content.decode()
    assert f'value="{reviewer.pk}"' in page and "alice" in page
    assert "training-loop" not in page and f'value="{loop.pk}"' not in page


def test_a_posted_service_account_is_refused_by_name_and_nothing_is_made(
    client, staff, reviewer, loop, sample_group
):
    client.force_login(staff)
    response = _post(client, reviewers=[reviewer.pk, loop.pk], overlap=2)
    assert response.status_code == 200
    page = response.content.decode()
    assert "training-loop: a service account cannot be a campaign reviewer" in page
    assert not Campaign.objects.exists()
    assert not loop.review_campaigns.exists()


def test_the_service_refuses_a_service_account_from_any_caller(reviewer, loop, sample_group):
    with pytest.raises(ValidationError, match="training-loop: a service account"):
        campaign_create(name="x", created_by=None, reviewers=[reviewer, loop], filters={})
    assert not Campaign.objects.exists()


@pytest.mark.parametrize("k", [2, 3])
def test_k_above_the_number_of_reviewers_is_refused_naming_both(
    client, staff, reviewer, sample_group, k
):
    client.force_login(staff)
    response = _post(client, reviewers=[reviewer.pk], overlap=k)
    page = response.content.decode()
    assert f"Overlap k = {k} needs at least {k} reviewers, but 1 is chosen" in page
    assert not Campaign.objects.exists()


def test_k_equal_to_the_number_of_reviewers_is_accepted(
    client, staff, reviewer, other_reviewer, sample_group
):
    client.force_login(staff)
    response = _post(client, reviewers=[reviewer.pk, other_reviewer.pk], overlap=2)
    assert response.status_code == 302
    assert Campaign.objects.get().overlap == 2


@pytest.mark.parametrize("reviewers", [[], [""]])
def test_no_reviewer_says_so(client, staff, sample_group, reviewers):
    client.force_login(staff)
    page = _post(client, reviewers=reviewers).content.decode()
    assert "Choose at least one reviewer." in page
    assert "is not a valid value" not in page
    assert not Campaign.objects.exists()


def test_a_staff_reviewer_needs_the_box_ticked(client, staff, reviewer, sample_group):
    client.force_login(staff)
    page = client.get(NEW).content.decode()
    assert "lead (staff: can read grader verdicts, not blind)" in page
    refused = _post(client, reviewers=[reviewer.pk, staff.pk], overlap=2).content.decode()
    assert "lead: a staff account can read the grader&#x27;s verdicts" in refused
    assert not Campaign.objects.exists()
    made = _post(client, reviewers=[reviewer.pk, staff.pk], overlap=2, allow_staff="on")
    assert made.status_code == 302
    campaign = Campaign.objects.get()
    detail = client.get(made.url).content.decode()
    assert "lead: staff, who can read the grader" in detail
    assert set(campaign.reviewers.all()) == {reviewer, staff}


def _admin_data(campaign: Campaign, **changes: Any) -> dict[str, Any]:
    """The admin change form as the browser would post it, with `changes`."""
    form = CampaignAdminForm(instance=campaign)
    data: dict[str, Any] = {}
    for name in form.fields:
        value = form[name].value()
        if isinstance(value, bool):
            if value:
                data[name] = "on"
        elif isinstance(value, list):
            data[name] = [getattr(v, "pk", v) for v in value]
        else:
            data[name] = "" if value is None else value
    data.update(changes)
    return data


def _reviewer_options(page: str) -> str:
    """The admin's reviewers select (other selects, such as created_by, list every account)."""
    found = re.search(r'<select name="reviewers".*?</select>', page, re.S)
    assert found, "no reviewers select on the page"
    return found.group(0)


@pytest.fixture
def root(db):
    return StaffFactory.create(username="root", is_superuser=True)


def test_the_admin_refuses_a_service_account(client, root, reviewer, loop, sample_group):
    campaign = campaign_create(
        name="c", created_by=root, reviewers=[reviewer], filters={}, overlap=1
    )
    client.force_login(root)
    url = f"/admin/review/campaign/{campaign.pk}/change/"
    for page in (client.get(url), client.get("/admin/review/campaign/add/")):
        offered = _reviewer_options(page.content.decode())
        assert f'value="{reviewer.pk}"' in offered and f'value="{loop.pk}"' not in offered
    response = client.post(url, _admin_data(campaign, reviewers=[reviewer.pk, loop.pk]))
    assert response.status_code == 200
    assert "training-loop: a service account cannot be a campaign reviewer" in (
        response.content.decode()
    )
    assert list(campaign.reviewers.all()) == [reviewer]
    assert not loop.review_campaigns.exists()


def test_the_admin_refuses_k_above_the_reviewers_when_either_changes(
    client, root, reviewer, sample_group
):
    campaign = campaign_create(
        name="c", created_by=root, reviewers=[reviewer], filters={}, overlap=1
    )
    client.force_login(root)
    url = f"/admin/review/campaign/{campaign.pk}/change/"
    response = client.post(url, _admin_data(campaign, overlap=3))
    assert "Overlap k = 3 needs at least 3 reviewers, but 1 is chosen" in (
        response.content.decode()
    )
    campaign.refresh_from_db()
    assert campaign.overlap == 1
    saved = client.post(url, _admin_data(campaign, name="renamed"))
    assert saved.status_code == 302
    campaign.refresh_from_db()
    assert campaign.name == "renamed"


def test_an_existing_service_reviewer_is_shown_and_must_be_taken_out(
    client, root, reviewer, loop, sample_group: Group
):
    # Made before the refusal existed (or straight in the database): the token check is the
    # backstop, the staff page says why the loop stopped, the admin makes it come out.
    campaign = campaign_create(
        name="old", created_by=root, reviewers=[reviewer], filters={}, overlap=1
    )
    campaign.reviewers.add(loop)
    client.force_login(root)
    detail = client.get(f"/review/staff/{campaign.pk}/").content.decode()
    assert "training-loop: a service account among the reviewers" in detail
    url = f"/admin/review/campaign/{campaign.pk}/change/"
    # Listed, selected: saving refuses it by name instead of dropping it unseen.
    assert f'value="{loop.pk}" selected' in _reviewer_options(client.get(url).content.decode())
    kept = client.post(url, _admin_data(campaign, name="renamed"))
    assert "training-loop: a service account cannot be a campaign reviewer" in (
        kept.content.decode()
    )
    fixed = client.post(url, _admin_data(campaign, reviewers=[reviewer.pk]))
    assert fixed.status_code == 302
    assert not loop.review_campaigns.exists()
