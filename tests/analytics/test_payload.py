"""The dashboard numbers, computed from factory-built labels, against the reference libraries."""

from __future__ import annotations

import warnings

import krippendorff
import numpy as np
import pytest
from scipy.stats import bootstrap, kendalltau
from sklearn.metrics import cohen_kappa_score

from grading.models import CandidateGrade
from review.analytics.agreement_dashboard import SEED, agreement_payload
from review.analytics.filters import Filters
from review.analytics.frame import load_frame
from review.models import Label
from review.models.reviewing import CRITERIA
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


def build_rubric(n_groups: int = 6, passers: int = 3, seed: int = 0):
    """Grader rubric scores per candidate and criterion; each reviewer one score per candidate.

    Returns ``grader[group][candidate][criterion]`` and ``human[reviewer][group][candidate]``.
    """
    rng = np.random.default_rng(seed)
    study = make_study(n_groups, passers)
    grader = rng.integers(1, 6, (n_groups, passers, len(CRITERIA)))
    human = np.clip(grader.mean(axis=2).round() + rng.integers(-1, 2, (2, n_groups, passers)), 1, 5)
    for k, (group, atts) in enumerate(zip(study.groups, study.attempts, strict=True)):
        rubric = [
            {c: {"score": int(grader[k, i, j])} for j, c in enumerate(CRITERIA)}
            for i in range(passers)
        ]
        grade_group(group, atts, [2] * passers, rubric=rubric)
        for r, reviewer in enumerate(study.reviewers):
            scores = [int(v) for v in human[r, k]]
            review_group(study.campaign, group, atts, reviewer, ["t2"] * passers, rubric=scores)
    return grader, human


def score_everyone_the_same(criterion: str, score: int) -> None:
    Label.objects.update(**{criterion: score})
    grades = list(CandidateGrade.objects.all())
    for grade in grades:
        grade.scores = {**grade.scores, criterion: {"score": score}}
    CandidateGrade.objects.bulk_update(grades, ["scores"])


def rubric_kappa(g, h):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # UndefinedMetricWarning on degenerate resamples
        return cohen_kappa_score(g, h, weights="quadratic", labels=[1, 2, 3, 4, 5])


def test_criterion_kappas_carry_task_bootstrap_cis_matching_scipy():
    grader, human = build_rubric()
    rows = payload()["criteria"]
    n_groups = grader.shape[0]

    def reference(j):
        # Items are (reviewer, candidate) labels; the resampling unit is the group's task.
        def statistic(tasks):
            g = np.concatenate([grader[t, :, j] for t in tasks for _ in range(2)])
            h = np.concatenate([human[r, t] for t in tasks for r in range(2)])
            return rubric_kappa(g, h)

        return statistic

    assert [r["criterion"] for r in rows] == list(CRITERIA)
    for j, row in enumerate(rows):
        g = np.concatenate([grader[:, :, j].ravel()] * 2)
        h = np.concatenate([human[0].ravel(), human[1].ravel()])
        expected = bootstrap(
            (np.arange(n_groups),),
            reference(j),
            vectorized=False,
            n_resamples=200,
            method="percentile",
            rng=np.random.default_rng(SEED),
        )
        assert row["kappa"] == pytest.approx(rubric_kappa(g, h))
        assert row["low"] == pytest.approx(expected.confidence_interval.low, rel=1e-9)
        assert row["high"] == pytest.approx(expected.confidence_interval.high, rel=1e-9)
        assert row["se"] == pytest.approx(expected.standard_error, rel=1e-9)
        assert row["n"] == g.size
        assert row["n_tasks"] == n_groups


def test_a_criterion_scored_the_same_by_everyone_has_no_kappa_and_no_interval():
    build_rubric()
    score_everyone_the_same("approach_suitability", 3)
    rows = {r["criterion"]: r for r in payload()["criteria"]}
    flat = rows["approach_suitability"]
    assert (flat["kappa"], flat["low"], flat["high"], flat["se"]) == (None, None, None, None)
    assert flat["n"] == 36 and flat["n_tasks"] == 6
    assert rows["implementation_precision"]["low"] is not None


def test_criteria_without_scored_pairs_have_no_interval():
    build_rubric()
    grades = list(CandidateGrade.objects.all())
    for grade in grades:
        grade.scores = {}  # e.g. an older verdict without rubric scores
    CandidateGrade.objects.bulk_update(grades, ["scores"])
    for row in payload()["criteria"]:
        assert row["kappa"] is None and row["low"] is None and row["high"] is None
        assert row["n"] == 0 and row["n_tasks"] == 0


def test_criterion_kappa_on_a_single_task_has_a_collapsed_interval():
    build_rubric(n_groups=1)
    for row in payload()["criteria"]:
        assert row["n_tasks"] == 1
        if row["kappa"] is not None:
            assert row["low"] == row["kappa"] == row["high"]
