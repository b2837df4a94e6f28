"""The grader's claims on the diff (issue 17): after the reveal every `code` evidence is a claim
the reviewer marks correct / wrong / can't tell; before it, nothing of them exists."""

from __future__ import annotations

import pytest
from django.db import IntegrityError, transaction
from django.urls import reverse
from django.utils import timezone

from review.claims import CLAIM_CRITERIA, RUBRIC, code_claims
from review.models import Assignment, Campaign, ClaimMark
from review.models.reviewing import CRITERIA
from review.selectors.claims import candidate_claims
from review.services.campaigns import campaign_create
from review.services.queue import assignment_next
from review.services.reviewing import review_submit
from tests.review.blind import CLAIM_TEXT, GRADER_SECRET, grader_claims_for
from tests.review.helpers import complete_labels, with_panel_fragments

pytestmark = pytest.mark.django_db
JSON = {"HTTP_ACCEPT": "application/json"}


def test_claims_are_citations_of_code_evidence() -> None:
    evidence = {
        "E1": {"type": "code", "candidate": "7", "path": "a.py", "line_start": 3,
               "line_end": 4, "side": "post"},
        "E2": {"type": "trajectory", "candidate": "A", "event_index": 2},
        "E3": {"type": "code", "candidate": "7", "path": "a.py", "line_start": 0,
               "line_end": 1, "side": "post"},  # no line 0: not a claim
    }  # fmt: skip
    minimality = {"score": 2, "rationale": "big", "evidence": ["E1", "E2", "E3"]}
    issue = {"category": "side_effect", "description": "prints", "evidence": ["E1"]}
    judgements = {
        "7": {
            "scores": {"minimality_of_changes": minimality},
            "severe_issues": [issue],
            "evidence": ["E1"],
            "summary": "ok",
        }
    }
    notes = [{"candidate": "7", "note": "moved down", "evidence": ["E1", "nope"]}]
    claims = code_claims(evidence, judgements, notes)
    assert [(c.criterion, c.text, c.evidence_id) for c in claims] == [
        ("minimality_of_changes", "big", "E1"),
        ("severe_issue", "prints", "E1"),
        ("tier", "ok", "E1"),
        ("reorder", "moved down", "E1"),
    ]
    assert len({c.key for c in claims}) == 4  # one evidence, four claims
    assert claims[0].score == 2 and claims[1].category == "side_effect"
    assert tuple(CRITERIA) == RUBRIC and set(RUBRIC) < set(CLAIM_CRITERIA)


@pytest.fixture
def revealed(sample_group, reviewer, staff):
    run = grader_claims_for(sample_group)
    campaign = campaign_create(
        name="Claims",
        created_by=staff,
        reviewers=[reviewer],
        filters={},
        overlap=1,
        reveal_policy=Campaign.Reveal.AFTER_SUBMISSION,
    )
    assignment = assignment_next(campaign=campaign, reviewer=reviewer)
    return assignment, run


def _claim_forms(page: str) -> list[tuple[str, str]]:
    """(form action, claim handle) of every claim form on the page."""
    out = []
    for chunk in page.split('class="rv-claim-form"')[1:]:
        head = page[: page.index(chunk)].rsplit("<form", 1)[1]
        action = head.split('action="')[1].split('"')[0]
        handle = chunk.split('name="claim" value="')[1].split('"')[0]
        out.append((action, handle))
    return out


def test_claims_appear_only_after_the_reveal_and_marks_are_stored(client, reviewer, revealed):
    assignment, run = revealed
    client.force_login(reviewer)
    url = reverse("review:page", args=[assignment.pk])
    before = client.get(url).content.decode()
    assert CLAIM_TEXT not in before and "rv-claim" not in before and GRADER_SECRET not in before
    # Before submission the endpoint knows no claim, whatever is asked.
    c = assignment.candidates.first()
    handles = [cc.handle for cc in candidate_claims(run=run, candidates=[c])]
    assert handles
    mark_url = reverse("review:claim", args=[assignment.pk, c.token])
    assert (
        client.post(mark_url, {"claim": handles[0], "mark": "correct"}, **JSON).status_code == 404
    )
    assert not ClaimMark.objects.exists()

    complete_labels(assignment, "t2")
    review_submit(assignment=Assignment.objects.get(pk=assignment.pk))
    after = with_panel_fragments(client, assignment, client.get(url).content.decode())
    forms = _claim_forms(after)
    n_candidates = assignment.candidates.count()
    # Each candidate: its minimality claim and (where it removes a line) its issue claim.
    assert n_candidates <= len(forms) <= 2 * n_candidates
    assert after.count(f'<p class="rv-claim-text">{CLAIM_TEXT}') == n_candidates
    assert 'data-side="new"' in after and 'data-side="old"' in after
    # Handles are opaque: no attempt id, evidence id or run id in them.
    for _, handle in forms:
        assert handle.startswith("k") and len(handle) == 21

    action, handle = forms[0]
    ok = client.post(action, {"claim": handle, "mark": "wrong"}, **JSON)
    assert ok.json() == {"ok": True, "mark": "wrong"}
    client.post(action, {"claim": handle, "mark": "unsure"}, **JSON)  # a change of mind
    mark = ClaimMark.objects.get()
    assert mark.mark == "unsure" and mark.grader_run_id == run.pk
    assert mark.criterion in CLAIM_CRITERIA
    assert 'value="unsure" checked' in client.get(url).content.decode()
    # A bad mark is refused with a message; someone else's handle is not found.
    assert client.post(action, {"claim": handle, "mark": "maybe"}, **JSON).status_code == 400
    other = next(a for a, _ in forms if a != action)
    assert client.post(other, {"claim": handle, "mark": "wrong"}, **JSON).status_code == 404
    # Without JavaScript: a plain form post, back to the page.
    plain = client.post(action, {"claim": handle, "mark": "correct"})
    assert plain.status_code == 302 and ClaimMark.objects.get().mark == "correct"


def test_a_campaign_that_never_reveals_has_no_claims(client, sample_group, reviewer, staff):
    run = grader_claims_for(sample_group)
    campaign = campaign_create(
        name="Never", created_by=staff, reviewers=[reviewer], filters={}, overlap=1
    )
    assignment = assignment_next(campaign=campaign, reviewer=reviewer)
    complete_labels(assignment, "t1")
    review_submit(assignment=Assignment.objects.get(pk=assignment.pk))
    client.force_login(reviewer)
    page = client.get(reverse("review:page", args=[assignment.pk])).content.decode()
    assert "rv-claim" not in page and CLAIM_TEXT not in page
    c = assignment.candidates.first()
    assert c is not None
    handle = candidate_claims(run=run, candidates=[c])[0].handle
    url = reverse("review:claim", args=[assignment.pk, c.token])
    assert client.post(url, {"claim": handle, "mark": "correct"}, **JSON).status_code == 404


def test_the_database_refuses_unknown_marks_and_duplicates(revealed) -> None:
    assignment, run = revealed
    c = assignment.candidates.first()
    row = {"candidate": c, "grader_run": run, "claim_key": "E1|1|tier", "evidence_id": "E1",
           "criterion": "tier", "marked_at": timezone.now()}  # fmt: skip
    ClaimMark.objects.create(mark="correct", **row)
    for bad in ({"mark": "correct"}, {"mark": "maybe", "claim_key": "x"},
                {"mark": "wrong", "claim_key": "y", "criterion": "style"}):  # fmt: skip
        with pytest.raises(IntegrityError), transaction.atomic():
            ClaimMark.objects.create(**(row | bad))


def test_the_default_graders_claims_land_on_lines_the_reviewer_sees(reviewer, staff) -> None:
    """The shipped grader (analysis, no model) on the sample: its code evidence becomes claims
    about the reviewer's candidates, each on a line the candidate's rendered diff shows."""
    import re

    from grading.models import GraderRun, Group
    from grading.services.demo import sample_load
    from grading.services.grader_runs import grader_run_execute
    from review.blinded_cache import assignment_redactor, rendered_diffs

    sample_load()
    group = Group.objects.get(external_id="sample-humanize-lite-1024")
    run = GraderRun.objects.get(group=group)
    grader_run_execute(run_id=run.pk, worker="test")
    run.refresh_from_db()
    assert run.status == GraderRun.Status.SUCCEEDED, run.failure_reason
    campaign = campaign_create(
        name="Default grader",
        created_by=staff,
        reviewers=[reviewer],
        filters={},
        overlap=1,
        reveal_policy=Campaign.Reveal.AFTER_SUBMISSION,
    )
    assignment = assignment_next(campaign=campaign, reviewer=reviewer)
    candidates = list(assignment.candidates.all())
    claims = candidate_claims(run=run, candidates=candidates)
    assert claims, "the default grader cited no code"
    redactor = assignment_redactor(assignment=assignment)
    diffs = rendered_diffs(
        patches={c.token: c.attempt.patch for c in candidates},
        redactor=redactor,
        task=group.task,
    )
    drawn = 0
    for cc in claims:
        assert cc.target is not None  # every cited candidate is one of the reviewer's
        files = {f.path: f.html for f in diffs[cc.target.token]}
        html = files.get(redactor(cc.claim.path))
        if html is None:
            continue
        attr = "o" if cc.side == "old" else "n"
        line = cc.claim.line_end
        if f'data-side="{cc.side}" data-line="{line}"' in html or re.search(
            rf'<tr [^>]*data-{attr}="{line}"', html
        ):
            drawn += 1
    assert drawn == len(claims), (drawn, len(claims))
