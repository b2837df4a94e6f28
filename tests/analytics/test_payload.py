"""The dashboard numbers, computed from factory-built labels, against the reference libraries."""

from __future__ import annotations

import krippendorff
import numpy as np
import pytest
from scipy.stats import kendalltau
from sklearn.metrics import cohen_kappa_score

from review.analytics.agreement import agreement_payload
from review.analytics.filters import Filters
from review.analytics.frame import load_frame
from tests.analytics.factories import grade_group, make_study, review_group

pytestmark = pytest.mark.django_db

# (grader tiers, reviewer-1 tiers, reviewer-2 tiers) per group of three passers.
GROUPS = [
    ([1, 2, 3], ["t1", "t2", "t3"], ["t1", "t3", "t3"]),
    ([1, 1, 2], ["t2", "t1", "t2"], ["t1", "t1", "t3"]),
    ([2, 3, 3], ["t2", "t3", "t2"], ["t2", "t3", "t3"]),
    ([3, 2, 1], ["t1", "t2", "t3"], ["t2", "t2", "t3"]),
    ([1, 2, 2], ["t1", "t2", "t2"], ["t1", "t3", "t2"]),
    ([2, 1, 3], ["t2", "t1", "t3"], ["t1", "t1", "t3"]),
]
NUM = {"t1": 1, "t2": 2, "t3": 3}


def payload(**filters):
    f = Filters(**filters)
    return agreement_payload(load_frame(f), filters=f.as_json(), n_resamples=200)


def build():
    study = make_study(len(GROUPS), 3)
    r1, r2 = study.reviewers
    for group, atts, (g, h1, h2) in zip(study.groups, study.attempts, GROUPS, strict=True):
        grade_group(group, atts, g)
        review_group(study.campaign, group, atts, r1, h1)
        review_group(study.campaign, group, atts, r2, h2)
    return study


def test_it_matches_sklearn_and_krippendorff():
    build()
    p = payload()
    grader = [t for g, _, _ in GROUPS for t in g]
    h1 = [NUM[t] for _, h, _ in GROUPS for t in h]
    h2 = [NUM[t] for _, _, h in GROUPS for t in h]
    # Consensus of two reviewers: the median, a split vote taking the worse tier.
    cons = [max(a, b) if a != b else a for a, b in zip(h1, h2, strict=True)]
    kappa = cohen_kappa_score(grader, cons, weights="quadratic", labels=[1, 2, 3])
    assert p["headline"]["kappa"]["estimate"] == pytest.approx(kappa)
    assert p["headline"]["raw_agreement"]["estimate"] == pytest.approx(
        np.mean(np.array(grader) == np.array(cons))
    )
    alpha = krippendorff.alpha([h1, h2], level_of_measurement="ordinal", value_domain=[1, 2, 3])
    assert p["headline"]["alpha_humans"]["estimate"] == pytest.approx(alpha)
    alpha_g = krippendorff.alpha(
        [h1, h2, grader], level_of_measurement="ordinal", value_domain=[1, 2, 3]
    )
    assert p["headline"]["alpha_with_grader"]["estimate"] == pytest.approx(alpha_g)
    assert p["confusion"]["matrix"] == [
        [sum(1 for g, c in zip(grader, cons, strict=True) if g == i and c == j) for j in (1, 2, 3)]
        for i in (1, 2, 3)
    ]
    low, high = p["headline"]["kappa"]["low"], p["headline"]["kappa"]["high"]
    assert low <= kappa <= high
    assert p["headline"]["kappa"]["n_tasks"] == len(GROUPS)


def test_it_matches_scipy_kendall_tau_per_group():
    build()
    p = payload()
    taus = []
    for g, h1, h2 in GROUPS:
        # Human key: mean over reviewers of each candidate's average rank position (tier, rank).
        pos1 = _avg_rank([NUM[t] * 1000 + i + 1 for i, t in enumerate(h1)])
        pos2 = _avg_rank([NUM[t] * 1000 + i + 1 for i, t in enumerate(h2)])
        human = (np.array(pos1) + np.array(pos2)) / 2
        grader = [t * 1000 + i + 1 for i, t in enumerate(g)]
        tau = kendalltau(human, grader).statistic
        if not np.isnan(tau):
            taus.append(tau)
    assert p["headline"]["tau_b"]["estimate"] == pytest.approx(np.mean(taus))


def _avg_rank(keys):
    from scipy.stats import rankdata

    return list(rankdata(keys, method="average"))
