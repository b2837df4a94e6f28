"""Filter values that name nothing (a run, step, repository, campaign, configuration or reviewer
that does not exist, a parameter that is no filter) are said, as unparsable ones are: on the
pages as a message (the value dropped, like "step must be a whole number"), on downloads as a
400 with the reason (an empty export of nothing would pass for a real one)."""

from __future__ import annotations

import pytest
from django.urls import reverse

from review.models import StatsSnapshot
from tests.analytics.conftest import run_worker
from tests.analytics.factories import GraderConfigFactory, grade_group, make_study, review_group

pytestmark = pytest.mark.django_db


@pytest.fixture
def study():
    s = make_study(2, 3, run="sample-run")
    for g, atts in zip(s.groups, s.attempts, strict=True):
        grade_group(g, atts, [1, 2, 3])
        review_group(s.campaign, g, atts, s.reviewers[0], ["t1", "t2", "t3"])
    return s


@pytest.mark.parametrize(
    ("query", "message"),
    [
        ("run=nope", "unknown run &#x27;nope&#x27;"),
        ("campaign=99999", "unknown campaign 99999"),
        ("config=99999", "unknown grader configuration 99999"),
        ("reviewer=99999", "unknown reviewer 99999"),
        ("repo=no/such", "unknown repository &#x27;no/such&#x27;"),
        ("step=7", "unknown step 7"),
        ("run=sample-run&step=7", "unknown step 7 in run &#x27;sample-run&#x27;"),
        ("count=bogus", "unknown parameter &#x27;count&#x27;"),
    ],
)
def test_the_agreement_page_says_which_value_is_unknown(
    staff_client, enqueued, study, query, message
):
    body = staff_client.get(f"/dashboards/?{query}").content.decode()
    assert f'<p class="error">{message}' in body


def test_an_unknown_run_is_dropped_so_the_picker_and_figures_agree(staff_client, enqueued, study):
    staff_client.get("/dashboards/?run=nope")
    run_worker()
    # The slice computed is the whole data (what the "all" picker shows), not an empty one.
    assert StatsSnapshot.objects.get().params["filters"]["run"] is None
    body = staff_client.get("/dashboards/?run=nope").content.decode()
    assert '<option value="">all</option>' in body
    assert "No passing candidates match these filters." not in body


def test_known_values_raise_no_message(staff_client, enqueued, study):
    config = GraderConfigFactory.create()
    query = (
        f"run=sample-run&step=1&repo=owner/repo&campaign={study.campaign.pk}"
        f"&config={config.pk}&reviewer={study.reviewers[0].pk}&unit=attempt"
    )
    body = staff_client.get(f"/dashboards/?{query}").content.decode()
    assert '<p class="error">' not in body


def test_the_export_page_says_so_too(staff_client, study):
    body = staff_client.get("/dashboards/export?run=nope").content.decode()
    assert '<p class="error">unknown run &#x27;nope&#x27;</p>' in body


@pytest.mark.parametrize(
    ("query", "reason"),
    [
        ("run=nope", "unknown run 'nope'"),
        ("campaign=99999", "unknown campaign 99999"),
        ("step=abc", "step must be a whole number"),
        ("format=xlsx", "unknown format 'xlsx' (formats: "),
        ("count=bogus", "unknown parameter 'count'"),
    ],
)
def test_a_download_of_an_unknown_slice_is_a_400_with_the_reason(
    staff_client, study, query, reason
):
    for what in ("labels", "package"):
        response = staff_client.get(f"/dashboards/export/{what}.zip?{query}")
        assert response.status_code == 400, (what, query)
        assert response["Content-Type"].startswith("text/plain")
        assert reason in response.content.decode()


def test_a_known_slice_still_downloads(staff_client, study):
    response = staff_client.get("/dashboards/export/labels.zip?format=csv&run=sample-run")
    assert response.status_code == 200
    assert response["Content-Type"] == "application/zip"


def test_a_csv_of_an_unknown_slice_is_a_400(staff_client, enqueued, study):
    response = staff_client.get(reverse("dashboards:csv", args=["headline"]) + "?run=nope")
    assert response.status_code == 400
    assert "unknown run 'nope'" in response.content.decode()


@pytest.mark.parametrize(
    ("query", "message"),
    [
        ("a=nope&b=sample-run", "A: unknown run &#x27;nope&#x27;"),
        ("a=sample-run&b=sample-run@9", "B: run &#x27;sample-run&#x27; has no step 9"),
        ("a=sample-run@x&b=sample-run", "A: the step after @ must be a whole number"),
        ("a=sample-run&b=sample-run@1&source=99999", "judged by: unknown grader configuration"),
        ("a=sample-run&b=sample-run@1&source=bots", "judged by: &#x27;bots&#x27; is neither"),
    ],
)
def test_the_audit_says_which_side_is_unknown_and_computes_nothing(
    staff_client, enqueued, study, query, message
):
    body = staff_client.get(f"/dashboards/audit?{query}").content.decode()
    assert f'<p class="error">{message}' in body
    assert " vs " not in body
    assert not StatsSnapshot.objects.exists()
    csv = staff_client.get(reverse("dashboards:csv", args=["audit"]) + f"?{query}&kind=audit")
    assert csv.status_code == 400


def test_a_known_audit_has_no_message(staff_client, enqueued, study):
    body = staff_client.get("/dashboards/audit?a=sample-run&b=sample-run@1").content.decode()
    assert '<p class="error">' not in body
    assert StatsSnapshot.objects.count() == 1
