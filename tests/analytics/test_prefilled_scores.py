"""Per-criterion statistics use only scores the reviewer set or confirmed, and say how many
were left as the tier pre-filled them (issue 17)."""

from __future__ import annotations

import json

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


def test_the_labels_export_and_package_say_which_scores_were_left_prefilled(tmp_path):
    from review.analytics.exports import labels_page, reviewer_pseudonym
    from review.analytics.package import package_export

    study = make_study(1, 2)
    r1, r2 = study.reviewers
    (group,), (atts,) = study.groups, study.attempts
    grade_group(group, atts, [1, 2])
    review_group(study.campaign, group, atts, r1, ["t1", "t2"], rubric=[5, 4])
    review_group(study.campaign, group, atts, r2, ["t1", "t2"], rubric=[4, 3])
    left = Label.objects.filter(candidate__assignment__reviewer=r2)
    # The second criterion's score was cleared: no score, so nothing pre-filled is left of it.
    left.update(prefilled=list(CRITERIA[:2]), **{CRITERIA[1]: None})
    _, rows = labels_page(filters=Filters(), config=None, offset=0, limit=100)
    humans = [h for row in rows for h in row["human_tiers"]]
    assert len(humans) == 4
    for h in humans:
        mine = h["reviewer"] == reviewer_pseudonym(r2.pk)
        assert h["rubric_prefilled"] == ([CRITERIA[0]] if mine else [])
        assert set(h["rubric"]) == set(CRITERIA)
        assert (h["rubric"][CRITERIA[1]] is None) == mine
    assert not any(row["synthetic"] for row in rows)

    result = package_export(fmt="jsonl", out_dir=tmp_path)
    assert result.manifest["synthetic"] == {"groups": 0, "note": None}
    lines = (tmp_path / result.files["attempts"]).read_text().splitlines()
    reviews = [r for line in lines for r in json.loads(line)["reviews"]]
    assert sorted(r["rubric_prefilled"] for r in reviews) == [[], [], [CRITERIA[0]], [CRITERIA[0]]]
