"""Pages and endpoints through the test client: access, forms without JavaScript, query counts,
reveal policy, and a blindness walk over every response a reviewer receives."""

import json
import re

import pytest
from django.urls import reverse

from grading.models import Group
from grading.services.demo import sample_load
from review.models import Assignment, Campaign, Label
from review.models.reviewing import CRITERIA
from review.services.campaigns import campaign_create
from review.services.queue import assignment_next
from review.services.reviewing import fix_request_create, label_save
from review.services.viewing import candidate_viewed_set
from tests.review.blind import (
    GRADER_SECRET,
    forbidden_strings,
    grader_verdict_for,
    leaks,
    make_ids_distinctive,
)
from tests.review.helpers import added_line, with_panel_fragments

pytestmark = pytest.mark.django_db
JSON = {"HTTP_ACCEPT": "application/json"}


@pytest.fixture
def assignment(campaign, reviewer):
    return assignment_next(campaign=campaign, reviewer=reviewer)


def _complete_form(rank: int) -> dict:
    return {
        "tier": "t1",
        "rank_in_tier": rank,
        "mergeability": "as_is",
        **dict.fromkeys(CRITERIA, 4),
    }


def test_it_routes_a_reviewer_from_home_to_the_queue(client, reviewer, campaign):
    client.force_login(reviewer)
    assert client.get("/").url == reverse("review:queue")
    page = client.get(reverse("review:queue")).content.decode()
    assert "Sample campaign" in page and "Start the next group" in page


def test_it_starts_the_next_group_from_the_queue(client, reviewer, campaign):
    client.force_login(reviewer)
    response = client.post(reverse("review:next", args=[campaign.pk]))
    assignment = Assignment.objects.get(reviewer=reviewer)
    assert response.url == reverse("review:page", args=[assignment.pk])


def test_someone_elses_assignment_is_not_found(client, assignment, other_reviewer):
    client.force_login(other_reviewer)
    token = assignment.candidates.first().token
    for name, args, method in [
        ("review:page", [assignment.pk], "get"),
        ("review:compare", [assignment.pk], "get"),
        ("review:trajectory", [assignment.pk, token], "get"),
        ("review:file", [assignment.pk, token], "get"),
        ("review:label", [assignment.pk, token], "post"),
        ("review:fix", [assignment.pk, token], "post"),
        ("review:viewed", [assignment.pk, token], "post"),
        ("review:events", [assignment.pk], "post"),
        ("review:submit", [assignment.pk], "post"),
    ]:
        response = getattr(client, method)(reverse(name, args=args))
        assert response.status_code == 404, name


def test_a_reviewer_cannot_reach_staff_pages(client, reviewer, campaign):
    client.force_login(reviewer)
    for url in ["/review/staff/", "/review/staff/new", f"/review/staff/{campaign.pk}/"]:
        assert client.get(url).status_code == 403
    assert client.get("/admin/").status_code == 302  # to the admin login, never in


def test_a_campaign_outside_the_reviewers_pool_is_not_found(client, sample_group, staff):
    outsider = campaign_create(name="Other", created_by=staff, reviewers=[staff], filters={})
    from tests.factories import UserFactory

    client.force_login(UserFactory(username="carol"))
    assert client.post(reverse("review:next", args=[outsider.pk])).status_code == 404


def test_staff_create_a_campaign_from_a_filter(client, staff, reviewer, sample_group):
    client.force_login(staff)
    assert client.get("/review/staff/new").status_code == 200
    response = client.post(
        "/review/staff/new",
        {
            "name": "From the form",
            "run": sample_group.step.run.pk,
            "step": 0,
            "repository": sample_group.task.repo,
            "has_verdict": "",
            "reviewers": [reviewer.pk],
            "overlap": 1,
            "show_trajectories": "on",
            "reveal_policy": "after_submission",
            "lease_minutes": 60,
        },
    )
    campaign = Campaign.objects.get(name="From the form")
    assert response.url == reverse("review:staff-detail", args=[campaign.pk])
    assert list(campaign.groups.all()) == [sample_group]
    assert campaign.show_test_output is False
    assert client.get(response.url).status_code == 200


def test_labels_and_fix_requests_work_as_plain_form_posts(client, assignment, reviewer):
    client.force_login(reviewer)
    c = assignment.candidates.order_by("position").first()
    response = client.post(reverse("review:label", args=[assignment.pk, c.token]), {"tier": "t3"})
    assert response.status_code == 302 and response.url.endswith(f"#cand-{c.alias}")
    assert Label.objects.get(candidate=c).tier == "t3"
    # A file this candidate changed: display order is random, and not every candidate touches
    # the same files (the test-tampering one edits only tests).
    path = c.attempt.patch.files.order_by("pk").values_list("target_path", flat=True)[0]
    fix = {"path": path, "line": 1, "side": "new", "text": "x", "severity": "nit"}
    client.post(reverse("review:fix", args=[assignment.pk, c.token]), fix)
    assert c.fix_requests.count() == 1
    bad = client.post(
        reverse("review:fix", args=[assignment.pk, c.token]), {**fix, "path": "nope.py"}, **JSON
    )
    assert bad.status_code == 400 and "not in this candidate" in bad.json()["problems"][0]


def _config(response) -> dict:
    text = response.content.decode()
    start = text.index('<script id="rv-config" type="application/json">')
    body = text[text.index(">", start) + 1 : text.index("</script>", start)]
    return json.loads(body)


def test_a_label_post_from_a_page_out_of_date_is_refused_and_says_to_reload(
    client, assignment, reviewer
):
    """The page sends back when the label it was filled from was saved (based_on); a label
    saved since (another tab or window) is not written over, as JSON or as a plain post."""
    client.force_login(reviewer)
    c = assignment.candidates.order_by("position").first()
    url = reverse("review:label", args=[assignment.pk, c.token])
    page = reverse("review:page", args=[assignment.pk])
    assert _config(client.get(page))["labels"][c.token]["based_on"] == ""
    saved = client.post(url, {"tier": "t2", "rank_in_tier": 1, "based_on": ""}, **JSON).json()
    assert saved["ok"] is True
    # The page as loaded now carries the new base, in its JSON and in the plain form.
    html = client.get(page, {"c": c.alias})
    assert _config(html)["labels"][c.token]["based_on"] == saved["saved_at"]
    assert f'name="based_on" value="{saved["saved_at"]}"' in html.content.decode()
    # A second page still based on no label (or an old one) is refused, and nothing changes.
    stale = client.post(url, {"rank_in_tier": "", "notes": "old", "based_on": ""}, **JSON)
    assert stale.status_code == 400
    assert "another tab or window" in stale.json()["problems"][0]
    plain = client.post(url, {"rank_in_tier": "", "based_on": ""}, follow=True)
    assert "Reload the page" in plain.content.decode()
    label = Label.objects.get(candidate=c)
    assert (label.tier, label.rank_in_tier, label.notes) == ("t2", 1, "")
    # Based on the last save it goes through; a based_on that is not a time is a clear error.
    again = client.post(url, {"rank_in_tier": 2, "based_on": saved["saved_at"]}, **JSON)
    assert again.json()["ok"] is True
    assert Label.objects.get(candidate=c).rank_in_tier == 2
    bad = client.post(url, {"rank_in_tier": 3, "based_on": "yesterday"}, **JSON)
    assert bad.status_code == 400 and bad.json()["problems"] == [
        "based_on: Not a time of a saved label."
    ]
    # A client that does not send based_on is not checked (a partial save of its own).
    assert client.post(url, {"rank_in_tier": 4}, **JSON).json()["ok"] is True
    assert Label.objects.get(candidate=c).rank_in_tier == 4


def test_submit_reports_problems_as_json_then_locks(client, assignment, reviewer):
    client.force_login(reviewer)
    url = reverse("review:submit", args=[assignment.pk])
    assert client.post(url, **JSON).status_code == 400
    for n, c in enumerate(assignment.candidates.order_by("position")):
        client.post(
            reverse("review:label", args=[assignment.pk, c.token]), _complete_form(n + 1), **JSON
        )
    assert client.post(url, **JSON).json()["ok"] is True
    page = client.get(reverse("review:page", args=[assignment.pk])).content.decode()
    assert "Submit review" not in page and "disabled" in page


def _group_with(n_candidates: int, n_files: int, name: str) -> Group:
    from grading.models import Attempt, Patch, Run, Step, Task

    run, _ = Run.objects.get_or_create(name=name)
    step, _ = Step.objects.get_or_create(run=run, number=0)
    task = Task.objects.create(
        external_id=name, repo="o/r", problem_statement="p", content_hash="0" * 64
    )
    group = Group.objects.create(step=step, task=task, content_hash="0" * 64)
    for i in range(n_candidates):
        diff = "".join(
            f"diff --git a/f{k}.py b/f{k}.py\n--- a/f{k}.py\n+++ b/f{k}.py\n@@ -1,2 +1,2 @@\n"
            f" keep\n-old = {k}\n+new = {k + i}\n"
            for k in range(n_files)
        )
        import hashlib

        sha = hashlib.sha256(diff.encode()).hexdigest()
        patch, _ = Patch.objects.get_or_create(
            sha256=sha, defaults={"content": diff.encode(), "size": len(diff)}
        )
        Attempt.objects.create(
            group=group, external_id=f"{name}-{i}", index=i, test_reward=1.0, patch=patch
        )
    return group


@pytest.mark.parametrize("shape", [(2, 1), (9, 6)])
def test_the_review_page_query_count_is_constant(
    client, django_assert_num_queries, reviewer, shape
):
    group = _group_with(shape[0], shape[1], name=f"shape-{shape[0]}-{shape[1]}")
    campaign = campaign_create(
        name=f"c{shape}", created_by=None, reviewers=[reviewer], filters={"run": group.step.run_id}
    )
    assignment = assignment_next(campaign=campaign, reviewer=reviewer)
    for c in assignment.candidates.all():
        label_save(candidate=c, values={"tier": "t2"})
        fix_request_create(candidate=c, path="f0.py", line=1, side="new", text="t", severity="nit")
    client.force_login(reviewer)
    url = reverse("review:page", args=[assignment.pk])
    client.get(url)  # warm the caches: the count must not depend on them either
    # session, user, assignment, candidates(+attempt, patch, trajectory, label), fix requests,
    # agent names for redaction.
    with django_assert_num_queries(6):
        response = client.get(url)
    assert response.content.decode().count('<section class="rv-panel') == shape[0]


def test_the_verdict_is_revealed_only_after_submission_and_only_if_allowed(
    client, sample_group, reviewer, other_reviewer, staff
):
    grader_verdict_for(sample_group)
    reveal = campaign_create(
        name="reveal",
        created_by=staff,
        reviewers=[reviewer],
        filters={},
        reveal_policy=Campaign.Reveal.AFTER_SUBMISSION,
    )
    hidden = campaign_create(
        name="hidden", created_by=staff, reviewers=[other_reviewer], filters={}
    )
    for user, campaign in ((reviewer, reveal), (other_reviewer, hidden)):
        a = assignment_next(campaign=campaign, reviewer=user)
        client.force_login(user)
        url = reverse("review:page", args=[a.pk])
        assert GRADER_SECRET not in client.get(url).content.decode()
        for n, c in enumerate(a.candidates.order_by("position")):
            client.post(reverse("review:label", args=[a.pk, c.token]), _complete_form(n + 1))
        client.post(reverse("review:submit", args=[a.pk]))
        after = client.get(url).content.decode()
        assert (GRADER_SECRET in after) is (campaign is reveal)
    # The reviewer with a reveal can flag a disagreement.
    client.force_login(reviewer)
    a = Assignment.objects.get(reviewer=reviewer)
    c = a.candidates.first()
    client.post(reverse("review:disagree", args=[a.pk, c.token]), {"note": "too generous"})
    assert c.disagreements.get().note == "too generous"


def test_blindness_walk_over_every_response(client, db, reviewer, other_reviewer, staff):
    make_ids_distinctive()
    sample_load()
    group = Group.objects.get(external_id="sample-humanize-lite-1024")
    grader_verdict_for(group)
    campaign = campaign_create(
        name="Blind", created_by=staff, reviewers=[reviewer, other_reviewer], filters={}
    )
    # Another reviewer's drafts on the same group must never show.
    theirs = assignment_next(campaign=campaign, reviewer=other_reviewer)
    for c in theirs.candidates.all():
        label_save(candidate=c, values={"tier": "t3", "notes": "OTHER-REVIEWER-NOTE"})
        first_path = c.attempt.patch.files.first().target_path
        candidate_viewed_set(candidate=c, path=first_path, viewed=True)
        fix_request_create(
            candidate=c,
            **added_line(c),
            text="OTHER-FIX",
            severity="nit",
        )
    forbidden = [*forbidden_strings(group), "OTHER-REVIEWER-NOTE", "OTHER-FIX"]
    forbidden += list(theirs.candidates.values_list("token", flat=True))

    bodies: list[tuple[str, str]] = []

    def record(response, what):
        text = response.content.decode("utf-8", "replace") + json.dumps(dict(response.headers))
        bodies.append((what, text))
        return response

    client.force_login(reviewer)
    record(client.get("/", follow=True), "home")
    record(client.post(reverse("review:next", args=[campaign.pk])), "next")
    mine = Assignment.objects.get(reviewer=reviewer)
    page_url = reverse("review:page", args=[mine.pk])
    record(client.get(page_url), "page")
    candidates = list(mine.candidates.order_by("position"))
    for n, c in enumerate(candidates):
        base = [mine.pk, c.token]
        record(client.get(reverse("review:trajectory", args=base), HTTP_X_FRAGMENT="1"), "traj")
        record(client.get(reverse("review:trajectory", args=base)), "traj page")
        for q in ("swe", "loop", "coder", "alert", "Generated"):
            record(client.get(reverse("review:trajectory", args=base), {"q": q}), f"search {q}")
        other = candidates[(n + 1) % len(candidates)]
        record(
            client.get(reverse("review:compare", args=[mine.pk]), {"a": c.token, "b": other.token}),
            "compare",
        )
        record(
            client.post(
                reverse("review:events", args=[mine.pk]),
                json.dumps({"events": [{"kind": "focus", "candidate": c.token}]}),
                content_type="application/json",
            ),
            "events",
        )
        record(
            client.post(reverse("review:label", args=base), _complete_form(n + 1), **JSON), "label"
        )
        fix = {
            "path": "humanize_lite/sizes.py",
            "line": 9,
            "side": "new",
            "text": "fix",
            "severity": "minor",
        }
        record(client.post(reverse("review:fix", args=base), fix, **JSON), "fix")
        # The candidate's panel, as the page script fetches it when its tab is opened.
        listed = record(
            client.get(reverse("review:panel", args=base), HTTP_X_FRAGMENT="1"), "panel"
        ).content.decode()
        first_file = listed.split('<li data-file-id="')[1].split('"')[0]
        viewed = {"file": first_file, "viewed": "1"}
        ticked = record(client.post(reverse("review:viewed", args=base), viewed, **JSON), "viewed")
        assert ticked.json()["ok"], ticked.json()
        record(client.get(page_url), "page again")
    record(client.post(reverse("review:submit", args=[mine.pk]), **JSON), "submit")
    record(client.get(page_url), "page after")
    record(client.get(reverse("review:queue")), "queue after")

    found = [(what, leaks(text, forbidden)) for what, text in bodies]
    assert [(what, bad) for what, bad in found if bad] == []
    # The sample's "Generated by swe-loop" fingerprint was there (in one candidate's panel).
    assert any("[redacted]" in text for what, text in bodies if what in ("page", "panel"))


def _shows_line(html: str, side: str, n: int) -> bool:
    """Whether a diff table shows line n on that side (line numbers on cells or on rows)."""
    row_attr = "o" if side == "old" else "n"
    return (
        f'data-side="{side}" data-line="{n}"' in html
        or re.search(rf'<tr [^>]*data-{row_attr}="{n}"', html) is not None
    )


def _section(page: str, section: str) -> str:
    start = page.index(f'id="{section}"')
    return page[start : page.index("</section>", start)]


def test_compare_mode_diffs_the_post_patch_versions_and_lists_one_sided_files_apart(
    client, reviewer, assignment
):
    """Compare mode: per file both change, the diff between the two post-patch versions (read
    from the repository's base), built by the shared candidate compare on the redacted text
    the reviewer sees; files only one of them changes are listed apart."""
    from grading.diffs import compare_patches, parse_patch, post_versions
    from review.blinded_cache import assignment_redactor, base_files

    client.force_login(reviewer)
    redactor = assignment_redactor(assignment=assignment)
    task = assignment.group.task
    cands = sorted(assignment.candidates.all(), key=lambda c: c.alias)
    parsed = {c.token: parse_patch(redactor(c.attempt.patch.text)) for c in cands}
    pairs = [
        (x, y)
        for x in cands
        for y in cands
        if x.alias < y.alias and set(parsed[x.token].paths) & set(parsed[y.token].paths)
    ]
    assert pairs  # the sample has candidates that edit the same file
    url = reverse("review:compare", args=[assignment.pk])
    differing = 0
    for a, b in pairs:
        page = client.get(url, {"a": a.token, "b": b.token}).content.decode()
        assert "rv-compare-hunks-only" not in page  # the sample ships its repository
        both, apart = _section(page, "rv-compare-both"), _section(page, "rv-compare-apart")
        for fc in compare_patches(parsed[a.token], parsed[b.token]):
            if fc.a is None or fc.b is None:
                who = a if fc.a is not None else b
                assert f'data-path="{fc.path}" data-only="{who.alias}"' in apart
                continue
            if fc.identical:
                assert f'<li data-path="{fc.path}">' in _section(page, "rv-compare-same")
                continue
            differing += 1
            row = both[both.index(f'data-path="{fc.path}"') :]
            shared = fc.count("shared")
            summary = (
                f"{shared} changed line{'' if shared == 1 else 's'} shared, "
                f"{fc.count('only_a')} only on the left, {fc.count('only_b')} only on the right."
            )
            assert summary in row.split("</article>")[0]
            # The table's two sides are the two candidates' post-patch files: every line
            # number on the left is A's, on the right B's, on the lines that differ.
            base = base_files(task=task, paths=[fc.a.old_path or ""])
            pair = post_versions(fc, {p: redactor(t) for p, t in base.items()})
            assert pair is not None and pair.complete
            (seg,) = pair.segments
            for tag, i1, i2, j1, j2 in seg.opcodes():
                for i in range(i1, i2) if tag != "equal" else ():
                    assert _shows_line(row, "old", seg.a[i].no)
                for j in range(j1, j2) if tag != "equal" else ():
                    assert _shows_line(row, "new", seg.b[j].no)
            assert re.search(r'<tr class="d-(replace|insert|delete)"', row)
    assert differing  # some pair changes a file both touch, differently
    a = cands[0]
    same = client.get(url, {"a": a.token, "b": a.token}).content.decode()
    assert same.count("Both candidates make the same change here.") == len(parsed[a.token].files)
    assert "No file is changed by both in different ways." in same


def test_compare_mode_without_source_rebuilds_from_hunks_and_says_so(client, reviewer):
    group = _group_with(2, 2, name="no-source")  # a task with no repository mirror
    campaign = campaign_create(
        name="no-source", created_by=None, reviewers=[reviewer], filters={"run": group.step.run_id}
    )
    assignment = assignment_next(campaign=campaign, reviewer=reviewer)
    a, b = sorted(assignment.candidates.all(), key=lambda c: c.alias)
    client.force_login(reviewer)
    page = client.get(
        reverse("review:compare", args=[assignment.pk]), {"a": a.token, "b": b.token}
    ).content.decode()
    assert 'id="rv-compare-hunks-only"' in page
    assert page.count("Only the diffs' hunks are available") == 2  # f0.py and f1.py differ
    assert page.count('<span class="rv-badge">hunks only</span>') == 2
    # f1.py: one side "new = 1", the other "new = 2", on line 2 of both versions, after the
    # shared context line 1.
    both = _section(page, "rv-compare-both")
    f1 = both[both.index('data-path="f1.py"') :]
    assert _shows_line(f1, "old", 2) and _shows_line(f1, "new", 2)
    assert re.search(r'<tr class="d-equal"[^>]*><td class="d-ln"[^>]*>1</td>', f1)


def test_a_candidate_without_test_output_says_so_instead_of_an_empty_box(
    client, reviewer, sample_group, campaign
):
    # SWE-bench runs imported from a run-level report carry a verdict but no output or report.
    sample_group.attempts.update(test_output_z=b"", test_output_size=0, test_report={})
    assignment = assignment_next(campaign=campaign, reviewer=reviewer)
    client.force_login(reviewer)
    page = client.get(reverse("review:page", args=[assignment.pk])).content.decode()
    html = with_panel_fragments(client, assignment, page)
    assert '<pre class="rv-pre"></pre>' not in html
    assert "No test output or per-test report was imported for this candidate" in html
