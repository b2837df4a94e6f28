"""Selectors: the human consensus an export carries for each attempt.

Without a campaign filter it is the stored one (`ConsensusLabel`, written by
`label_refresh.labels_refresh` from every campaign's labels). With one, it is computed from that
campaign's labels alone, as `labels_refresh` computes the stored one: the rows' human tiers are
that campaign's, so n_reviews and the consensus must be too. Dawid–Skene's reviewer accuracies
depend on every label of the slice, so the campaign's consensus is computed for the whole
campaign at once, whatever attempts a page or batch asks for, and cached until the data changes.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Collection
from dataclasses import dataclass

import numpy as np
from django.core.cache import cache

from review.analytics.arrays import METHOD_NAMES, METHOD_NONE, Consensus, consensus
from review.analytics.filters import UNIT_ATTEMPT, Filters
from review.analytics.frame import FloatArray, Frame, IntArray, load_frame
from review.analytics.snapshots import data_fingerprint
from review.models import ConsensusLabel

# The key holds the data version, so an entry is never stale: the timeout only bounds how long
# an unused one takes room.
CACHE_SECONDS = 60 * 60
# Bumped when `ConsensusTable` changes shape, so no process unpickles an older layout.
CACHE_VERSION = 1
# One computation at a time per key (`_computed_once`): how long a claim lasts if its holder
# dies (a waiter then takes it over; 80k attempts compute in about 4 s, so a live holder is
# done long before), how long the others wait for a slow one, and how often they look.
CLAIM_SECONDS = 30
WAIT_SECONDS = 60.0
POLL_SECONDS = 0.1

# How the consensus is reached and what a campaign filter changes: the manifests' wording.
CONSENSUS_RULE = (
    "median tier of submitted human labels (a split vote takes the worse tier); one-coin "
    "Dawid-Skene for candidates with 3+ tier ratings; a majority of 'exploit' labels gives no "
    "tier. The grader never votes; each reviewer's first review counts (sentinels never do)."
)
CAMPAIGN_SCOPE = (
    "With a campaign filter, the consensus is computed from that campaign's labels alone: "
    "Dawid-Skene's reviewer accuracies are re-estimated from them, so a tier can differ from "
    "the one computed from every campaign's labels (the export without a campaign filter). "
    "Run, step and repo filters select attempts; they do not change whose labels vote."
)


@dataclass(frozen=True)
class AttemptConsensus:
    """The human consensus of one attempt (the fields `ConsensusLabel` stores)."""

    tier: int | None
    method: str
    n_reviews: int
    n_exploit: int


@dataclass(frozen=True)
class ConsensusTable:
    """The consensus of every reviewed attempt of a frame, as parallel arrays: compact to cache
    (a campaign of 160,000 attempts is a few MB), and rows are built only for the attempts a
    caller asks for."""

    attempt: IntArray
    tier: FloatArray  # NaN: no tier (exploit)
    method: IntArray  # arrays.METHOD_* codes, never METHOD_NONE
    n_reviews: IntArray
    n_exploit: IntArray

    @classmethod
    def of(cls, frame: Frame, cons: Consensus) -> ConsensusTable:
        """From a per-attempt frame (`unit == "attempt"`: one candidate per attempt)."""
        reviewed = cons.method != METHOD_NONE
        return cls(
            attempt=frame.attempt[reviewed],
            tier=cons.tier[reviewed],
            method=cons.method[reviewed],
            n_reviews=cons.n_reviews[reviewed],
            n_exploit=cons.n_exploit[reviewed],
        )

    def rows(self, ids: Collection[int] | None = None) -> dict[int, AttemptConsensus]:
        """Per attempt id, its consensus: of every reviewed attempt, or of those in `ids`."""
        at = (
            np.arange(self.attempt.size)
            if ids is None
            else np.flatnonzero(np.isin(self.attempt, np.fromiter(ids, np.int64, len(ids))))
        )
        return {
            int(self.attempt[i]): AttemptConsensus(
                tier=None if np.isnan(self.tier[i]) else int(self.tier[i]),
                method=METHOD_NAMES[int(self.method[i])],
                n_reviews=int(self.n_reviews[i]),
                n_exploit=int(self.n_exploit[i]),
            )
            for i in at
        }


def campaign_consensus(*, campaign: int) -> ConsensusTable:
    """The consensus of every attempt the campaign's labels reviewed, from those labels alone.

    Cached under the campaign and `data_fingerprint()`, the data version that also tells
    `labels_stale` the stored consensus is out of date: every writer of what the statistics read
    moves it (a submitted review, an admin edit, an import). So paging through a campaign
    computes this once per data change, and requests arriving together compute it once between
    them (`_computed_once`). The stamp is read before the labels: a label submitted meanwhile
    leaves this entry under the old stamp, never the new.
    """
    key = cache_key(campaign)

    def compute() -> ConsensusTable:
        # Labels only: the consensus reads no grades, λ rows, claim marks or sentinels.
        frame = load_frame(Filters(unit=UNIT_ATTEMPT, campaign=campaign), labels_only=True)
        return ConsensusTable.of(frame, consensus(frame))

    return _computed_once(key, compute)


def cache_key(campaign: int) -> str:
    """The campaign's entry at the current data version (and `<key>:computing`, its claim)."""
    return f"analytics:campaign-consensus:{campaign}:{data_fingerprint()}"


def _computed_once(key: str, compute: Callable[[], ConsensusTable]) -> ConsensusTable:
    """The cached table, or one computation of it however many requests ask at once.

    The first to ask takes a short-lived claim (`cache.add`, atomic in Redis and in locmem) and
    computes; the others wait for its entry instead of loading the same labels alongside it
    (4 s a time at 80k attempts). A claim outlives its holder's crash by `CLAIM_SECONDS` at most
    (then a waiter takes it over), and a waiter gives up on a slow holder after `WAIT_SECONDS`
    and computes alongside: waiting never fails a page.
    """
    table: ConsensusTable | None = cache.get(key, version=CACHE_VERSION)
    if table is not None:
        return table
    claim = f"{key}:computing"
    give_up = time.monotonic() + WAIT_SECONDS
    while not (owned := cache.add(claim, 1, CLAIM_SECONDS, version=CACHE_VERSION)):
        time.sleep(POLL_SECONDS)
        table = cache.get(key, version=CACHE_VERSION)
        if table is not None:
            return table
        if time.monotonic() > give_up:
            break  # its holder is slow or gone: compute alongside, leave its claim alone
    try:
        # Another request may have stored it between our first look and the claim.
        table = cache.get(key, version=CACHE_VERSION)
        if table is None:
            table = compute()
            cache.set(key, table, CACHE_SECONDS, version=CACHE_VERSION)
        return table
    finally:
        if owned:
            cache.delete(claim, version=CACHE_VERSION)


@dataclass(frozen=True)
class ConsensusSource:
    """Where an export's consensus comes from: the stored rows (no table) or one campaign's
    table. Chosen once per export or page, so every batch reads the same consensus."""

    table: ConsensusTable | None

    def of(self, ids: Collection[int]) -> dict[int, AttemptConsensus]:
        """The consensus of the attempts in `ids` that have one (one query, or none)."""
        if self.table is not None:
            return self.table.rows(ids)
        return {
            c.attempt_id: AttemptConsensus(c.tier, c.method, c.n_reviews, c.n_exploit)
            for c in ConsensusLabel.objects.filter(attempt_id__in=ids)
        }


def consensus_source(*, campaign: int | None) -> ConsensusSource:
    """The consensus an export of `campaign` carries (every campaign's, the stored one, when
    None): the one home of that choice, for the labels export, its API pages and the package."""
    return ConsensusSource(None if campaign is None else campaign_consensus(campaign=campaign))
