"""Grader claims on the diff in real Chromium (issue 17): after the reveal each claim sits
under the diff line it cites, with its text; the reviewer marks it by click or by key
(g / G, then y / n / u) and the marks are stored; the reviewer's own labels stay beside the
grader's verdict. Screenshots at 1280 and 1920 px."""

from __future__ import annotations

import pytest

from grading.models import Group
from grading.services.demo import sample_load
from review.models import Assignment, Campaign, ClaimMark
from review.services.campaigns import campaign_create
from review.services.queue import assignment_next
from review.services.reviewing import review_submit
from tests.browser.conftest import login
from tests.factories import UserFactory
from tests.review.blind import CLAIM_TEXT, grader_claims_for
from tests.review.helpers import complete_labels

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_claims_are_drawn_on_their_lines_and_marked_by_click_and_key(
    browser, server_url, artifacts
):
    sample_load()
    group = Group.objects.get(external_id="sample-humanize-lite-1024")
    grader_claims_for(group)
    alice = UserFactory.create(username="alice")
    campaign = campaign_create(
        name="Claims",
        created_by=None,
        reviewers=[alice],
        filters={},
        overlap=1,
        reveal_policy=Campaign.Reveal.AFTER_SUBMISSION,
    )
    assignment = assignment_next(campaign=campaign, reviewer=alice)
    complete_labels(assignment, "t2", score=3)
    review_submit(assignment=Assignment.objects.get(pk=assignment.pk))

    page = browser.new_page(viewport={"width": 1280, "height": 900})
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    login(page, server_url, "alice")
    # A candidate whose patch also removes a line has two claims (its added line, and the
    # base side of its removed one), which the g / G walk below needs; the order is random,
    # so it is chosen, not assumed to be A. Neither the last tab nor its neighbour (which is
    # prefetched): the last one is checked below as not yet loaded.
    candidates = list(Assignment.objects.get(pk=assignment.pk).candidates.order_by("position"))
    two_claims = next(
        c
        for c in candidates[:-2]
        if any(
            ln.startswith("-") and not ln.startswith("---")
            for ln in c.attempt.patch.text.splitlines()
        )
    )
    page.goto(f"{server_url}/review/a/{assignment.pk}/?c={two_claims.alias}")
    page.wait_for_selector(".rv-panel.is-current tr.rv-claim-row .rv-claim")
    drawn = page.evaluate(
        """() => {
          const panel = document.querySelector('.rv-panel.is-current');
          return Array.from(panel.querySelectorAll('tr.rv-claim-row .rv-claim')).map((c) => {
            const row = c.closest('tr').previousElementSibling;
            // Line numbers on the row (data-o / data-n) or on its cells (data-line).
            const cell = row.querySelector('td.d-code[data-side="' + c.dataset.side + '"]');
            const onRow = row.dataset[c.dataset.side === 'old' ? 'o' : 'n'];
            return {
              side: c.dataset.side,
              line: c.dataset.lineEnd,
              rowLine: onRow || (cell && cell.dataset.line),
              file: c.closest('.rv-file').dataset.path,
              path: c.dataset.path,
              claimed: row.classList.contains('is-claimed'),
              visible: c.offsetParent !== null,
              text: c.querySelector('.rv-claim-text').textContent,
            };
          });
        }"""
    )
    assert drawn, f"no claim drawn on candidate {two_claims.alias}'s diff"
    for d in drawn:
        assert d["rowLine"] == d["line"] and d["file"] == d["path"] and d["claimed"], d
        assert d["visible"]
    assert any(d["side"] == "new" and CLAIM_TEXT in d["text"] for d in drawn)
    # After the reveal the reviewer's own labels stay beside the grader's verdict.
    mine = page.locator(".rv-panel.is-current .rv-reveal-yours").inner_text()
    assert "T2" in mine
    assert page.locator(".rv-panel.is-current .rv-reveal-scores").inner_text().count("3") >= 5
    assert page.locator(".rv-panel.is-current form.rv-label input[value=t2]").is_checked()
    page.locator(".rv-panel.is-current tr.rv-claim-row").first.scroll_into_view_if_needed()
    page.screenshot(path=str(artifacts / "claims-1280.png"))

    # By click: the first claim is wrong.
    first = page.locator(".rv-panel.is-current tr.rv-claim-row .rv-claim").first
    first.locator("input[value=wrong]").check()
    first.locator(".rv-claim-status", has_text="Saved").wait_for()
    # By key: g reaches the next claim, y marks it correct; "n" on a claim is "wrong", not the
    # page's "next file"; G goes back, u is "can't tell".
    page.locator("body").click(position={"x": 5, "y": 5})

    def press(key: str) -> str:
        handle = page.evaluate(
            """() => {
              const claim = document.activeElement.closest('.rv-claim');
              claim.querySelector('.rv-claim-status').textContent = '';
              return claim.dataset.claim;
            }"""
        )
        page.keyboard.press(key)
        page.locator(f"#claim-{handle} .rv-claim-status", has_text="Saved").wait_for()
        return str(handle)

    page.keyboard.press("g")
    page.keyboard.press("g")
    second = press("y")
    assert press("n") == second
    page.keyboard.press("G")
    first_handle = press("u")
    assert first_handle != second
    assert page.evaluate("document.querySelectorAll('tr.is-cursor').length") == 0  # no "n"ext file
    page.set_viewport_size({"width": 1920, "height": 1000})
    page.screenshot(path=str(artifacts / "claims-1920.png"))

    marks = sorted(ClaimMark.objects.values_list("mark", flat=True))
    assert marks == ["unsure", "wrong"], marks
    assert page.evaluate("document.querySelectorAll('.rv-claim.is-marked').length") >= 2

    # A candidate whose panel was not in the page (fetched when its tab is opened) gets its
    # claims drawn on its own diff as the panel arrives: the one farthest from the candidate
    # shown, as the page fetches and parses the neighbours ahead.
    tokens = page.eval_on_selector_all(".rv-tab", "tabs => tabs.map((t) => t.dataset.token)")
    shown = page.locator(".rv-panel.is-current").get_attribute("data-token")
    token = tokens[(tokens.index(shown) + len(tokens) // 2) % len(tokens)]
    assert len(tokens) >= 4
    assert page.locator(f'.rv-panel[data-token="{token}"][data-loaded]').count() == 0
    far = page.locator(f'.rv-tab[data-token="{token}"]')
    far.click()
    page.wait_for_selector(f'.rv-panel.is-current[data-token="{token}"] tr.rv-claim-row .rv-claim')
    later = page.locator(f'.rv-panel[data-token="{token}"] tr.rv-claim-row .rv-claim')
    assert later.first.get_attribute("data-target") == token
    assert not errors, errors
    page.close()


def test_the_dashboard_shows_claim_precision(browser, server_url, artifacts, monkeypatch):
    from tests.analytics.conftest import run_worker
    from tests.analytics.test_claim_precision_dashboard import _study
    from tests.factories import StaffFactory

    monkeypatch.setattr("review.tasks.compute_snapshot_task.apply_async", lambda **kw: None)
    _study()
    StaffFactory(username="lead")
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    login(page, server_url, "lead")
    page.goto(f"{server_url}/dashboards/")
    assert run_worker() == 1
    page.goto(f"{server_url}/dashboards/")
    section = page.locator("#claim-precision")
    section.scroll_into_view_if_needed()
    text = section.inner_text()
    assert "grader-a" in text and "Minimality of changes" in text and "0.700" in text
    assert section.locator('tr[data-criterion="all"]').count() == 2
    section.screenshot(path=str(artifacts / "dashboard-claims-1280.png"))
    page.set_viewport_size({"width": 1920, "height": 1000})
    section.screenshot(path=str(artifacts / "dashboard-claims-1920.png"))
    page.close()
