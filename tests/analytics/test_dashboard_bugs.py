"""Dashboard bugs of issue 17, each with the case that showed it: exploit candidates in the
confusion matrix, exploit rates named for what they count, round axis ticks, equal shades for
equal counts, and no zero-width interval on too few tasks."""

from __future__ import annotations

import pytest

from grading.models import CandidateGrade
from review.analytics.agreement_dashboard import agreement_payload
from review.analytics.charts import bars, heatmap, nice_ticks, precise
from review.analytics.filters import Filters
from review.analytics.frame import load_frame
from review.templatetags.review_tags import ci_interval, ci_label
from tests.analytics.conftest import run_worker
from tests.analytics.factories import grade_group, make_study, review_group


def _payload():
    f = Filters()
    return agreement_payload(load_frame(f), filters=f.as_json(), n_resamples=50)


@pytest.mark.django_db
def test_exploit_candidates_are_a_row_and_column_and_have_their_own_rates():
    study = make_study(2, 4)
    r1, r2 = study.reviewers
    for group, atts in zip(study.groups, study.attempts, strict=True):
        grade_group(group, atts, [1, 2, 3, 3])
        # Both reviewers call the last candidate an exploit, and so does the grader.
        review_group(study.campaign, group, atts, r1, ["t1", "t2", "t3", "exploit"])
        review_group(study.campaign, group, atts, r2, ["t1", "t2", "t3", "exploit"])
        CandidateGrade.objects.filter(attempt=atts[3]).update(exploit_suspected=True)
    p = _payload()
    m = p["confusion"]["matrix_with_exploit"]
    assert p["confusion"]["labels_with_exploit"] == ["T1", "T2", "T3", "exploit"]
    assert m[3][3] == 2  # the two exploit candidates, kept instead of dropped
    assert sum(map(sum, m)) == 8  # every reviewed and graded candidate
    (rates,) = p["status_rates"]
    assert rates["exploit_rate"] == 0.0  # no attempt's status says exploit_confirmed
    assert rates["reviewer_exploit_rate"] == pytest.approx(4 / 16)
    assert rates["grader_exploit_rate"] == pytest.approx(2 / 8)


@pytest.mark.django_db
def test_the_headline_counts_what_the_confusion_matrix_counts(staff_client):
    # "6 both graded and reviewed" sat above a matrix of 8: the exploit column was left out.
    study = make_study(2, 4)
    r1, r2 = study.reviewers
    for group, atts in zip(study.groups, study.attempts, strict=True):
        grade_group(group, atts, [1, 2, 3, 3])
        review_group(study.campaign, group, atts, r1, ["t1", "t2", "t3", "exploit"])
        review_group(study.campaign, group, atts, r2, ["t1", "t2", "t3", "exploit"])
    counts = _payload()["counts"]
    assert (counts["compared"], counts["compared_exploit"]) == (6, 2)
    assert counts["reviews"] == 16  # one per reviewer and candidate: labels, not sessions
    staff_client.get("/dashboards/")
    run_worker()
    text = " ".join(staff_client.get("/dashboards/").content.decode().split())
    assert "(16 labels by 2 reviewers)" in text
    assert "8 both graded and reviewed (2 of them judged exploits by the reviewers)" in text


def test_axis_ticks_are_round_and_bar_labels_keep_their_precision():
    chart = bars("Median active time to first issue (s)", "cost", ["T1", "T2"], [1.31, 2.63])
    ticks = [s.text for s in chart.shapes if s.cls == "tick" and s.anchor == "end"]
    assert ticks == ["0", "1", "2", "3"]
    assert [s.text for s in chart.shapes if s.cls == "barnum"] == ["1.31", "2.63"]
    assert nice_ticks(0.9) == ([0.0, 0.25, 0.5, 0.75, 1.0], 2)
    assert nice_ticks(42)[0][-1] >= 42
    assert precise(42.44) == "42.4" and precise(1234.0) == "1234"


def test_equal_counts_get_equal_shades_and_the_chart_says_how_to_read_it():
    chart = heatmap("c", "c", [[1, 0], [40, 1]], ["T1", "T2"])
    fills = {s.title: s.fill for s in chart.shapes if s.kind == "rect"}
    assert fills["grader T1, humans T1: 1"] == fills["grader T2, humans T2: 1"]
    assert "larger its count" in chart.note and "40" in chart.note


def test_too_few_tasks_print_the_estimate_without_an_interval():
    one_task = {"estimate": 0.632, "low": 0.632, "high": 0.632, "n_tasks": 1}
    assert ci_interval(one_task) == "too few tasks for an interval"
    many = {"estimate": 0.6, "low": 0.41, "high": 0.77, "n_tasks": 12}
    assert ci_interval(many) == "[0.41, 0.77]"
    assert ci_label(many) == "95% CI [0.410, 0.770]"


def _ci_chart_rows(chart):
    """Per row label: the circles and texts drawn on its line (y within the row)."""
    out = {}
    for s in chart.shapes:
        if s.kind == "text" and s.cls == "label":
            out[s.text] = {"y": s.y - 4, "dots": [], "texts": []}
    for s in chart.shapes:
        for row in out.values():
            if abs(s.y - row["y"]) < 0.01 and s.kind == "circle":
                row["dots"].append(s)
            if abs(s.y - 4 - row["y"]) < 0.01 and s.kind == "text" and s.cls != "label":
                row["texts"].append(s)
    return out


def test_a_configuration_without_an_interval_gets_no_dot_and_says_so():
    """QA: default:analysis (one reviewed task) was a dot at 0.00 in the κ chart, reading as
    κ = 0; with no estimate at all it said "undefined"."""
    from review.analytics.charts import ci_rows

    chart = ci_rows(
        "κ with 95% CI per grader configuration",
        "per_config",
        [
            ("careful", {"estimate": 0.87, "low": 0.81, "high": 0.91, "n_tasks": 5}),
            ("default:analysis", {"estimate": 0.0, "low": 0.0, "high": 0.0, "n_tasks": 1}),
            ("never reviewed", {"estimate": None, "low": None, "high": None, "n_tasks": 0}),
        ],
    )
    rows = _ci_chart_rows(chart)
    assert len(rows["careful"]["dots"]) == 1
    assert rows["default:analysis"]["dots"] == [] and rows["never reviewed"]["dots"] == []
    (one_task,) = rows["default:analysis"]["texts"]
    assert one_task.text == (
        "no estimate: too few tasks for an interval (1 task; point value 0.00)"
    )
    assert [t.text for t in rows["never reviewed"]["texts"]] == ["no estimate"]


# 11 px system-ui averages under 6 px a character (digits and lower case).
CHAR_PX = 6.0


def test_the_too_few_tasks_note_fits_in_the_chart():
    """QA: "too few tasks for an interv…" was cut at the right edge of the concordance chart
    (the note started after a dot near 1)."""
    from review.analytics.charts import ci_rows

    chart = ci_rows(
        "Pairwise concordance with 95% CI per grader configuration",
        "per_config",
        [
            ("careful", {"estimate": 0.97, "low": 0.93, "high": 1.0, "n_tasks": 5}),
            ("default:analysis", {"estimate": 0.96, "low": 0.96, "high": 0.96, "n_tasks": 1}),
        ],
    )
    notes = [s for s in chart.shapes if s.kind == "text" and "too few" in s.text]
    assert notes
    for s in notes:
        assert s.anchor == "start"
        assert s.x + CHAR_PX * len(s.text) <= chart.width, s.text
