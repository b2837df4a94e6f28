"""The queue "by RL impact": groups whose review can change training most come first, scored
from their stored advantages by grading.domain.rl_impact; the campaign pages expose it."""

from __future__ import annotations

import pytest

from grading.models import GraderRun
from grading.services.advantages import group_advantages_refresh
from review.models import Campaign, CampaignGroup
from review.services.campaigns import campaign_create
from review.services.impact import campaign_impact_refresh
from review.services.queue import assignment_next
from tests.factories import StaffFactory, UserFactory
from tests.training.builders import config, grade, import_groups, step_group

pytestmark = pytest.mark.django_db
TIED = {"p1": (1, 1), "p2": (1, 1), "p3": (1, 1), "p4": (1, 1)}
SPREAD = {"p1": (1, 1), "p2": (2, 1), "p3": (2, 2), "p4": (3, 1)}


@pytest.fixture
def groups():
    """Ungraded, graded with spread tiers, graded with every passer tied at the top."""
    cfg = config()
    ungraded, spread, tied = import_groups(step_group("t-0"), step_group("t-1"), step_group("t-2"))
    run = grade(spread, cfg, SPREAD)
    run.verdict = {"candidates": {}, "confidence": 1.0}
    run.save(update_fields=["verdict"])
    grade(tied, cfg, TIED)
    group_advantages_refresh(group_ids=[ungraded.pk, spread.pk, tied.pk], config=cfg)
    return ungraded, spread, tied


def _campaign(reviewers, order=Campaign.QueueOrder.RL_IMPACT, **kw):
    return campaign_create(
        name=f"Impact {order}",
        created_by=None,
        reviewers=reviewers,
        filters={},
        overlap=1,
        queue_order=order,
        **kw,
    )


def test_the_most_impactful_group_is_handed_out_first(groups):
    ungraded, spread, tied = groups
    users = [UserFactory() for _ in range(3)]
    campaign = _campaign(users)
    scores = {e.group_id: e for e in CampaignGroup.objects.filter(campaign=campaign)}
    assert scores[tied.pk].impact == 1.0
    assert scores[tied.pk].impact_detail["decisive_moves"] == scores[tied.pk].impact_detail["moves"]
    assert 0 < scores[spread.pk].impact < 1
    assert scores[spread.pk].impact_detail["uncertainty"] == 0
    assert scores[ungraded.pk].impact is None
    got = [assignment_next(campaign=campaign, reviewer=u).group_id for u in users]
    assert got == [tied.pk, spread.pk, ungraded.pk]


def test_the_plain_order_ignores_impact(groups):
    ungraded, spread, tied = groups
    users = [UserFactory() for _ in range(3)]
    campaign = _campaign(users, Campaign.QueueOrder.POSITION)
    got = [assignment_next(campaign=campaign, reviewer=u).group_id for u in users]
    assert got == [ungraded.pk, spread.pk, tied.pk]


def test_a_doubtful_verdict_raises_a_group(groups):
    spread = groups[1]
    campaign = _campaign([UserFactory()])
    GraderRun.objects.filter(group=spread).update(verdict={"candidates": {}, "confidence": 0.0})
    # The stored advantages did not change: the score stays until they are recomputed.
    assert campaign_impact_refresh(campaign=campaign) == 0
    CampaignGroup.objects.filter(campaign=campaign).update(impact_source="")
    campaign_impact_refresh(campaign=campaign)
    entry = CampaignGroup.objects.get(campaign=campaign, group=spread)
    assert entry.impact == 1.0 and entry.impact_detail["uncertainty"] == 1.0


def test_new_advantages_are_scored_when_the_queue_is_next_asked(groups):
    ungraded = groups[0]
    alice = UserFactory()
    campaign = _campaign([alice])
    assert CampaignGroup.objects.get(campaign=campaign, group=ungraded).impact is None
    grade(ungraded, config(), TIED)
    group_advantages_refresh(group_ids=[ungraded.pk], config=config())
    assignment_next(campaign=campaign, reviewer=alice)
    assert CampaignGroup.objects.get(campaign=campaign, group=ungraded).impact == 1.0
    # Nothing changed since: nothing is rewritten.
    assert campaign_impact_refresh(campaign=campaign) == 0


def test_the_staff_pages_and_the_admin_expose_the_order(client, groups):
    lead = StaffFactory(username="lead", is_superuser=True)
    client.force_login(lead)
    new = client.get("/review/staff/new").content.decode()
    assert 'name="queue_order"' in new and "by RL impact" in new
    assert 'name="impact_config"' in new
    admin = client.get("/admin/review/campaign/add/").content.decode()
    assert 'name="queue_order"' in admin and 'name="impact_config"' in admin
    campaign = _campaign([UserFactory()])
    detail = client.get(f"/review/staff/{campaign.pk}/").content.decode()
    assert "RL impact" in detail and "one-tier moves decisive" in detail
    # Listed in the queue's order: the tied group first, the ungraded one last.
    assert detail.index("t-2") < detail.index("t-1") < detail.index("t-0")
    assert "no graded advantages stored" in detail
