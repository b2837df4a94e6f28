"""The labels API with a campaign filter: every page carries that campaign's reviews, and
n_reviews and the consensus computed from them, not the stored consensus of every campaign."""

from __future__ import annotations

from typing import Any

import pytest
from rest_framework.test import APIClient

from review.analytics.label_refresh import labels_refresh
from review.models import Campaign, ConsensusLabel
from tests.analytics.factories import two_campaigns

pytestmark = pytest.mark.django_db


def _all_pages(client: APIClient, query: str) -> tuple[int, list[dict[str, Any]]]:
    """Every row of the paginated list, following `next`; and how many pages it took."""
    url: str | None = f"/api/v1/labels?{query}&page_size=16"
    rows: list[dict[str, Any]] = []
    pages = 0
    while url:
        page = client.get(url).json()
        assert page["count"] == 24  # 6 groups × (3 passers + 1 failure), in both campaigns
        rows += page["results"]
        pages += 1
        url = page["next"]
    return pages, rows


def test_it_pages_a_campaigns_labels_with_that_campaigns_counts_and_consensus(full):
    study, second = two_campaigns()
    passers = [a.pk for atts in study.attempts for a in atts]
    first_passers = {atts[0].pk for atts in study.attempts}

    pages, rows = _all_pages(full, f"campaign={second.pk}")
    assert pages == 2 and len(rows) == 24
    by_id = {r["attempt_db_id"]: r for r in rows}
    for aid in passers:
        row = by_id[aid]
        tier = 3 if aid in first_passers else 1
        assert [h["tier"] for h in row["human_tiers"]] == [tier, tier]
        assert row["n_reviews"] == 2 and row["consensus_tier"] == tier
        assert row["consensus_method"] == "median"
    assert sum(r["n_reviews"] == 0 for r in rows) == 6  # the failures

    _, mine = _all_pages(full, f"campaign={study.campaign.pk}")
    assert all(len(r["human_tiers"]) == r["n_reviews"] for r in mine)
    assert {r["n_reviews"] for r in mine if r["attempt_db_id"] in passers} == {3}
    # Unfiltered, the same attempts have both campaigns' five reviews.
    _, everything = _all_pages(full, "run=run-1")
    assert {r["n_reviews"] for r in everything if r["attempt_db_id"] in passers} == {5}

    # The first campaign's consensus is what the stored one is once only its labels are left.
    Campaign.objects.filter(pk=second.pk).delete()
    labels_refresh()
    alone = dict(ConsensusLabel.objects.values_list("attempt_id", "tier"))
    assert {r["attempt_db_id"]: r["consensus_tier"] for r in mine if r["n_reviews"]} == alone
