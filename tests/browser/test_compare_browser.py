"""Compare mode in real Chromium (issue 17): two candidates' post-patch versions diffed side
by side, highlighted, with intra-line marks; files only one of them changes listed apart;
nothing but aliases names a candidate. Screenshots at 1280 and 1920 px."""

from __future__ import annotations

import pytest

from grading.diffs import compare_patches, parse_patch
from grading.models import Group
from grading.services.demo import sample_load
from review.blinded_cache import assignment_redactor
from review.services.campaigns import campaign_create
from review.services.queue import assignment_next
from tests.browser.conftest import login
from tests.factories import UserFactory
from tests.review.blind import forbidden_strings, leaks, make_ids_distinctive

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_compare_shows_the_diff_between_two_post_patch_versions(browser, server_url, artifacts):
    make_ids_distinctive()
    sample_load()
    group = Group.objects.get(external_id="sample-humanize-lite-1024")
    alice = UserFactory.create(username="alice")
    campaign = campaign_create(
        name="Compare", created_by=None, reviewers=[alice], filters={}, overlap=1
    )
    assignment = assignment_next(campaign=campaign, reviewer=alice)
    redactor = assignment_redactor(assignment=assignment)
    cands = sorted(assignment.candidates.all(), key=lambda c: c.alias)
    parsed = {c.pk: parse_patch(redactor(c.attempt.patch.text)) for c in cands}

    def shape(x, y):  # type: ignore[no-untyped-def]
        files = compare_patches(parsed[x.pk], parsed[y.pk])
        both = [f for f in files if f.a and f.b and not f.identical]
        apart = [f for f in files if f.a is None or f.b is None]
        return both, apart

    # A pair that changes one file differently and has a file only one of them touches.
    a, b = next((x, y) for x in cands for y in cands if x.pk != y.pk and all(shape(x, y)))
    both, apart = shape(a, b)

    page = browser.new_page(viewport={"width": 1280, "height": 900})
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    login(page, server_url, "alice")
    page.goto(f"{server_url}/review/a/{assignment.pk}/compare?a={a.token}&b={b.token}")
    page.wait_for_selector(".rv-compare-pair table.d-file")
    seen = page.evaluate(
        """() => {
          const pairs = Array.from(document.querySelectorAll('#rv-compare-both .rv-compare-row'));
          const first = pairs[0];
          const table = first.querySelector('table.d-file');
          const box = table.getBoundingClientRect();
          return {
            paths: pairs.map((r) => r.dataset.path),
            apart: Array.from(document.querySelectorAll('#rv-compare-apart [data-only]'))
              .map((d) => [d.dataset.path, d.dataset.only]),
            heads: first.querySelector('.rv-compare-heads').innerText,
            highlighted: table.querySelectorAll('td.d-code span[class]').length,
            intraline: table.querySelectorAll('.d-chg').length,
            changedRows: table.querySelectorAll('tr.d-replace, tr.d-insert, tr.d-delete').length,
            tints: ['del', 'ins'].map((side) => {
              const cell = table.querySelector('td.d-code.' + side);
              return cell ? getComputedStyle(cell).backgroundColor : null;
            }),
            fits: box.right <= document.documentElement.clientWidth + 1,
            hunksOnly: !!document.getElementById('rv-compare-hunks-only'),
          };
        }"""
    )
    assert seen["paths"] == [f.path for f in both]
    assert seen["apart"] == [[f.path, a.alias if f.a is not None else b.alias] for f in apart]
    assert f"Candidate {a.alias}" in seen["heads"] and f"Candidate {b.alias}" in seen["heads"]
    assert seen["highlighted"] > 0 and seen["changedRows"] > 0
    assert seen["fits"] and not seen["hunksOnly"]
    # A's side and B's side are tinted as two versions (blue, amber), not as a deletion and an
    # insertion (red, green). Which sides the first file's rows have depends on the pair drawn:
    # an insertion-only file has no cell on A's side to look at.
    left, right = seen["tints"]
    assert left is not None or right is not None
    assert left in (None, "rgb(232, 240, 254)") and right in (None, "rgb(255, 244, 214)")
    page.screenshot(path=str(artifacts / "compare-1280.png"), full_page=True)
    # Collapsed context opens in place, and a one-sided file's own diff opens on demand.
    expander = page.locator(".rv-compare-pair button.d-expand").first
    if expander.count():
        expander.click()
    details = page.locator("#rv-compare-apart details").first
    details.locator("summary").click()
    assert details.locator("table.d-file").is_visible()
    page.set_viewport_size({"width": 1920, "height": 1000})
    page.screenshot(path=str(artifacts / "compare-1920.png"), full_page=True)
    body = page.content()
    assert leaks(body, forbidden_strings(group)) == []
    assert not errors, errors
    page.close()
