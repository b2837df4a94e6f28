"""Review fixtures: the project's sample group, reviewer personas (owner, other reviewer, staff)
and a campaign over the sample group."""

from __future__ import annotations

import pytest

from grading.models import Group
from grading.services.demo import sample_load
from review.models import Campaign
from review.services.campaigns import campaign_create
from tests.factories import StaffFactory, UserFactory


@pytest.fixture
def sample_group(db) -> Group:
    sample_load()
    return Group.objects.get(external_id="sample-humanize-lite-1024")


@pytest.fixture
def reviewer(db):
    return UserFactory(username="alice")


@pytest.fixture
def other_reviewer(db):
    return UserFactory(username="bob")


@pytest.fixture
def staff(db):
    return StaffFactory(username="lead")


@pytest.fixture
def campaign(sample_group, reviewer, other_reviewer, staff) -> Campaign:
    return campaign_create(
        name="Sample campaign",
        created_by=staff,
        reviewers=[reviewer, other_reviewer],
        filters={},
        overlap=2,
    )
