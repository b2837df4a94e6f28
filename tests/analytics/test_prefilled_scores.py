"""Per-criterion statistics use only scores the reviewer set or confirmed, and say how many
were left as the tier pre-filled them (issue 17)."""

from __future__ import annotations

import pytest

from review.analytics.agreement_dashboard import agreement_payload
from review.analytics.filters import Filters
from review.analytics.frame import load_frame
from review.models import Label
from review.models.reviewing import CRITERIA
from tests.analytics.factories import grade_group, make_study, review_group

pytestmark = pytest.mark.django_db
RUBRIC = [{key: {"score": s} for key in CRITERIA} for s in (5, 3, 2)]


def _criteria():
    f = Filters()
    return agreement_payload(load_frame(f), filters=f.as_json(), n_resamples=50)["criteria"]


def test_prefilled_scores_are_left_out_and_counted():
    study = make_study(3, 3)
    r1, r2 = study.reviewers
    for group, atts in zip(study.groups, study.attempts, strict=True):
        grade_group(group, atts, [1, 2, 3], rubric=RUBRIC)
        review_group(study.campaign, group, atts, r1, ["t1", "t2", "t3"], rubric=[5, 4, 2])
        review_group(study.campaign, group, atts, r2, ["t1", "t2", "t3"], rubric=[4, 3, 1])
    before = {c["criterion"]: c for c in _criteria()}
    left = Label.objects.filter(
        candidate__assignment__reviewer=r2, candidate__assignment__group=study.groups[0]
    )
    left.update(prefilled=list(CRITERIA[:2]))
    after = {c["criterion"]: c for c in _criteria()}
    for name in CRITERIA[:2]:
        assert after[name]["n_prefilled"] == 3
        assert after[name]["n"] == before[name]["n"] - 3
    for name in CRITERIA[2:]:
        assert after[name]["n_prefilled"] == 0
        assert after[name]["n"] == before[name]["n"]
