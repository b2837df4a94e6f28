"""A campaign's consensus (review.analytics.consensus): computed from that campaign's labels
alone, from a labels-only frame, once per data change however many pages read it, and without
the campaign's sentinel reviews."""

from __future__ import annotations

import threading
import time
from typing import Any
from unittest import mock

import numpy as np
import pytest
from django.core.cache import cache
from django.db import connection
from django.test.utils import CaptureQueriesContext

from review.analytics import consensus as consensus_module
from review.analytics.arrays import consensus
from review.analytics.exports import labels_page
from review.analytics.filters import UNIT_ATTEMPT, Filters
from review.analytics.frame import load_frame
from tests.analytics.factories import grade_group, review_group, two_campaigns
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db


def _page(campaign: int | None, page: int) -> dict[int, dict[str, Any]]:
    _, rows = labels_page(filters=Filters(campaign=campaign), config=None, offset=page * 8, limit=8)
    return {r["attempt_db_id"]: r for r in rows}


def _counting_frames() -> Any:
    """A spy on the frame loads of the campaign consensus (each one a computation)."""
    return mock.patch.object(consensus_module, "load_frame", wraps=load_frame)


def test_a_labels_only_frame_has_the_full_frames_labels_and_consensus(django_assert_num_queries):
    study, _ = two_campaigns()
    for g, atts in zip(study.groups, study.attempts, strict=True):
        grade_group(g, atts, [1, 2, 3])
    filters = Filters(unit=UNIT_ATTEMPT, campaign=study.campaign.pk)
    full = load_frame(filters)
    # Candidates, labels, their fix requests, imported campaigns: nothing of the grades.
    with django_assert_num_queries(4):
        only = load_frame(filters, labels_only=True)
    assert full.gr_pos.size == 18 and only.gr_pos.size == 0 and not only.configs
    for name in ("attempt", "group", "lab_pos", "lab_reviewer", "lab_exploit", "lab_fix_requests"):
        assert np.array_equal(getattr(only, name), getattr(full, name)), name
    assert np.array_equal(only.lab_tier, full.lab_tier, equal_nan=True)
    a, b = consensus(full), consensus(only)
    assert np.array_equal(a.tier, b.tier, equal_nan=True)
    assert np.array_equal(a.method, b.method) and np.array_equal(a.n_reviews, b.n_reviews)


def test_paging_a_campaign_computes_its_consensus_once():
    study, second = two_campaigns()
    _page(None, 0)  # the stored consensus is refreshed, out of the way
    with _counting_frames() as frames:
        first = _page(second.pk, 0)
        with CaptureQueriesContext(connection) as later:
            again = _page(second.pk, 1)
        _page(second.pk, 2)
        assert frames.call_count == 1
        _page(study.campaign.pk, 0)  # another campaign has its own
        assert frames.call_count == 2
    with CaptureQueriesContext(connection) as plain:
        _page(None, 1)
    assert {r["n_reviews"] for r in {**first, **again}.values()} == {0, 2}
    # A later page costs what an unfiltered one does, the data stamp (one query) instead of
    # the stored consensus (one query): never the campaign's labels again.
    assert len(later.captured_queries) == len(plain.captured_queries)


def test_a_label_submitted_in_the_campaign_counts_on_the_next_page():
    study, second = two_campaigns()
    before = _page(second.pk, 0)
    g, atts = study.groups[0], study.attempts[0]
    review_group(second, g, atts, UserFactory(username="late"), ["t3", "t3", "t1"])
    with _counting_frames() as frames:
        after = _page(second.pk, 0)
        assert frames.call_count == 1
    assert [before[a.pk]["n_reviews"] for a in atts] == [2, 2, 2]
    assert [after[a.pk]["n_reviews"] for a in atts] == [3, 3, 3]
    # Three tier ratings now: Dawid–Skene instead of the median.
    assert {before[a.pk]["consensus_method"] for a in atts} == {"median"}
    assert {after[a.pk]["consensus_method"] for a in atts} == {"dawid_skene"}


def test_a_sentinel_review_in_the_campaign_does_not_vote():
    study, second = two_campaigns()
    g, atts = study.groups[0], study.attempts[0]
    reviewer = second.assignments.filter(group=g).first().reviewer
    # The same reviewer again, blind, with the opposite tiers: measured, never counted.
    review_group(second, g, atts, reviewer, ["t1", "t3", "t3"], sentinel=True)
    rows = _page(second.pk, 0)
    assert [rows[a.pk]["n_reviews"] for a in atts] == [2, 2, 2]
    assert [rows[a.pk]["consensus_tier"] for a in atts] == [3, 1, 1]
    assert [len(rows[a.pk]["sentinel_tiers"]) for a in atts] == [1, 1, 1]
    table = consensus_module.campaign_consensus(campaign=second.pk)
    assert {c.n_reviews for c in table.rows([a.pk for a in atts]).values()} == {2}


def _claimed(campaign: int) -> tuple[str, str]:
    """The campaign's cache key and its claim, taken as a request computing it would."""
    key = consensus_module.cache_key(campaign)
    claim = f"{key}:computing"
    assert cache.add(claim, 1, 60, version=consensus_module.CACHE_VERSION)
    return key, claim


def test_requests_arriving_together_compute_the_consensus_once():
    _, second = two_campaigns()
    expected = consensus_module.campaign_consensus(campaign=second.pk)
    key = consensus_module.cache_key(second.pk)
    cache.delete(key, version=consensus_module.CACHE_VERSION)
    _, claim = _claimed(second.pk)  # another request is computing it

    def the_other_request_finishes() -> None:
        time.sleep(0.3)
        cache.set(key, expected, 60, version=consensus_module.CACHE_VERSION)
        cache.delete(claim, version=consensus_module.CACHE_VERSION)

    other = threading.Thread(target=the_other_request_finishes)
    with _counting_frames() as frames:
        start = time.monotonic()
        other.start()
        got = consensus_module.campaign_consensus(campaign=second.pk)
        waited = time.monotonic() - start
    other.join()
    assert frames.call_count == 0 and waited >= 0.25  # it waited for the other's table
    ids = [int(a) for a in expected.attempt]
    assert got.rows(ids) == expected.rows(ids) and len(ids) > 0


def test_a_claim_whose_holder_died_is_waited_for_only_so_long(monkeypatch):
    _, second = two_campaigns()
    _, claim = _claimed(second.pk)  # its holder never finishes
    monkeypatch.setattr(consensus_module, "WAIT_SECONDS", 0.3)
    with _counting_frames() as frames:
        start = time.monotonic()
        table = consensus_module.campaign_consensus(campaign=second.pk)
        waited = time.monotonic() - start
    assert frames.call_count == 1 and waited >= 0.3 and table.attempt.size > 0
    # The claim was not its own to release.
    assert cache.get(claim, version=consensus_module.CACHE_VERSION) == 1


def test_a_computation_releases_its_claim():
    _, second = two_campaigns()
    consensus_module.campaign_consensus(campaign=second.pk)
    claim = f"{consensus_module.cache_key(second.pk)}:computing"
    assert cache.get(claim, version=consensus_module.CACHE_VERSION) is None
    assert cache.add(claim, 1, 60, version=consensus_module.CACHE_VERSION)


def test_a_claim_that_expires_is_taken_over_before_the_wait_ends():
    _, second = two_campaigns()
    claim = f"{consensus_module.cache_key(second.pk)}:computing"
    assert cache.add(claim, 1, 1, version=consensus_module.CACHE_VERSION)  # its holder died
    with _counting_frames() as frames:
        start = time.monotonic()
        consensus_module.campaign_consensus(campaign=second.pk)
        waited = time.monotonic() - start
    assert frames.call_count == 1 and 0.5 < waited < consensus_module.WAIT_SECONDS / 2
    assert cache.get(claim, version=consensus_module.CACHE_VERSION) is None  # taken, released
