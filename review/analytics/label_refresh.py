"""Writers of the human consensus and of the calibrated tiers per grader configuration.

Both are recomputed from all submitted labels and all succeeded grader runs at once: the
consensus of one candidate does not depend on others under the median, but Dawid–Skene's
reviewer accuracies and the calibration fit do, so a partial update would be inconsistent.
Each write replaces its rows in one short transaction after the computation is done.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

import numpy as np
from django.db import transaction
from django.utils import timezone

from review.analytics.arrays import config_view, consensus
from review.analytics.consensus import ConsensusTable
from review.analytics.filters import UNIT_ATTEMPT, Filters
from review.analytics.frame import load_frame
from review.analytics.snapshots import data_fingerprint
from review.models import CalibratedLabel, CalibrationFit, ConsensusLabel
from review.stats import calibrate_tiers

BATCH = 2000


@dataclass(frozen=True)
class LabelsRefresh:
    consensus: int
    fits: int
    calibrated: int


def labels_stale() -> bool:
    """True when the stored consensus/calibration predate the current data."""
    fingerprint = data_fingerprint()
    stored = set(CalibrationFit.objects.values_list("fingerprint", flat=True))
    return not stored or stored != {fingerprint}


def labels_refresh(*, now: datetime | None = None) -> LabelsRefresh:
    """Recompute the consensus of every reviewed attempt and every configuration's calibration."""
    now = now or timezone.now()
    fingerprint = data_fingerprint()
    # Per attempt: a label or grade of a patch fans out to every attempt that submitted it, so
    # each attempt has its consensus and calibrated tier.
    frame = load_frame(Filters(unit=UNIT_ATTEMPT))
    cons = consensus(frame)
    consensus_rows = [
        ConsensusLabel(
            attempt_id=aid,
            tier=c.tier,
            method=c.method,
            n_reviews=c.n_reviews,
            n_exploit=c.n_exploit,
            computed_at=now,
        )
        for aid, c in ConsensusTable.of(frame, cons).rows().items()
    ]
    fits: list[tuple[CalibrationFit, list[CalibratedLabel]]] = []
    for cid in sorted(set(frame.gr_config.tolist())):
        view = config_view(frame, cid)
        scored = np.flatnonzero(~np.isnan(view.score))
        cal = calibrate_tiers(view.score, cons.tier, frame.task)
        fit = CalibrationFit(
            config_id=cid,
            n_labelled=cal.n_labelled if cal else 0,
            n_scored=int(scored.size),
            n_folds=cal.n_folds if cal else 0,
            held_out_mae=cal.held_out_mae if cal else None,
            held_out_accuracy=cal.held_out_accuracy if cal else None,
            reason=(cal.reason or "") if cal else "no candidate both scored and reviewed",
            fingerprint=fingerprint,
            computed_at=now,
        )
        rows = []
        if cal is not None:
            labelled = ~np.isnan(cons.tier)
            for i in scored:
                p = cal.probabilities[i]
                rows.append(
                    CalibratedLabel(
                        attempt_id=int(frame.attempt[i]),
                        grader_run_id=int(view.run[i]),
                        weighted_score=float(view.score[i]),
                        tier=int(cal.tier[i]),
                        p_t1=float(p[0]),
                        p_t2=float(p[1]),
                        p_t3=float(p[2]),
                        held_out=bool(labelled[i] and cal.n_folds > 0),
                    )
                )
        fits.append((fit, rows))

    with transaction.atomic():
        ConsensusLabel.objects.all().delete()
        ConsensusLabel.objects.bulk_create(consensus_rows, batch_size=BATCH)
        # Configurations that lost all their grades keep no stale calibration either.
        CalibrationFit.objects.exclude(config_id__in=[f.config_id for f, _ in fits]).delete()
        for fit, rows in fits:
            CalibrationFit.objects.filter(config_id=fit.config_id).delete()
            fit.save()
            for row in rows:
                row.fit = fit
            CalibratedLabel.objects.bulk_create(rows, batch_size=BATCH)
    return LabelsRefresh(len(consensus_rows), len(fits), sum(len(r) for _, r in fits))
