"""The synthetic study's pages in real Chromium at 1280 and 1920 px (issue 17): each says
synthetic (the review page too, and nothing more), and the boxes seen to overflow hold their
content: the revealed scores table in the sidebar, the fix-request form, the gate's decisions
table, and the campaign page's assignments (never broken inside "3 min 05 s").
Screenshots go to test-artifacts/."""

from __future__ import annotations

import io
import re
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command

from review.models import Assignment, Campaign
from review.services.demo import GRADERS, STUDY_CAMPAIGN, STUDY_RUN
from review.services.queue import assignment_next
from review.services.reviewing import review_submit
from tests.browser.conftest import login, switched
from tests.factories import StaffFactory, UserFactory
from tests.review.helpers import complete_labels

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

WIDTHS = (1280, 1920)

# Descendants whose right edge passes the box's own (1 px of rounding allowed).
STICKING_OUT = """(box) => {
  const edge = box.getBoundingClientRect().right + 1;
  return Array.from(box.querySelectorAll('*'))
    .filter((e) => e.getClientRects().length && e.getBoundingClientRect().right > edge)
    .map((e) => e.tagName + '.' + e.className + ': ' + (e.textContent || '').trim().slice(0, 40));
}"""


# Text broken over lines in the decisions' figure and date cells (the first four columns and
# the "not met" reasons are prose, free to wrap).
UNBROKEN = """(table) => {
  const out = [];
  for (const td of table.querySelectorAll('tbody td')) {
    if (td.cellIndex < 4 || td.classList.contains('gate-failures') || td.colSpan > 1) continue;
    if (/not met/.test(table.tHead.rows[0].cells[td.cellIndex]?.textContent || '')) continue;
    const walk = document.createTreeWalker(td, NodeFilter.SHOW_TEXT);
    for (let n = walk.nextNode(); n; n = walk.nextNode()) {
      if (!n.textContent.trim()) continue;
      const range = document.createRange();
      range.selectNodeContents(n);
      if (range.getClientRects().length > 1) out.push(n.textContent.trim());
    }
  }
  return out;
}"""


def fits(page: Any, selector: str) -> dict[str, Any]:
    return page.locator(selector).first.evaluate(
        "(e) => ({scroll: e.scrollWidth, client: e.clientWidth})"
    )


def no_page_overflow(page: Any) -> None:
    wide = page.evaluate(
        "() => [document.documentElement.scrollWidth, document.documentElement.clientWidth]"
    )
    assert wide[0] <= wide[1], f"the page scrolls sideways: {wide}"


def _logged_in(browser: Any, server_url: str, username: str) -> tuple[Any, list[str]]:
    """A page logged in as `username`, and the script errors it will collect."""
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    login(page, server_url, username)
    return page, errors


@pytest.fixture
def study(settings: Any, tmp_path: Path) -> Campaign:
    settings.VAR_DIR = tmp_path
    settings.GAGAR_REPO_DIR = tmp_path / "repos"
    call_command("demo", "--study", stdout=io.StringIO())
    # A gate decision per synthetic configuration, as `grader_eval --approve` records them.
    for rater, _ in GRADERS:
        call_command(
            "grader_eval",
            "--config",
            rater.name,
            "--against",
            STUDY_CAMPAIGN,
            "--approve",
            "--resamples",
            "100",
            stdout=io.StringIO(),
        )
    return Campaign.objects.get(name=STUDY_CAMPAIGN)


def test_the_study_pages_say_synthetic_and_hold_their_content_at_both_widths(
    browser: Any, server_url: str, artifacts: Path, study: Campaign
) -> None:
    alice = UserFactory.create(username="alice")
    study.reviewers.add(alice)
    done = assignment_next(campaign=study, reviewer=alice)
    assert done is not None
    complete_labels(done, "t2", score=3)
    review_submit(assignment=Assignment.objects.get(pk=done.pk))
    open_ = assignment_next(campaign=study, reviewer=alice)
    assert open_ is not None and open_.pk != done.pk

    page, errors = _logged_in(browser, server_url, "alice")
    for width in WIDTHS:
        page.set_viewport_size({"width": width, "height": 900})
        # After the reveal: the grader's scores, your scores and its reasons fit the sidebar.
        for candidate in done.candidates.order_by("position"):
            page.goto(f"{server_url}/review/a/{done.pk}/?c={candidate.alias}")
            switched(page)
            badge = page.locator("h1 .synthetic-badge")
            assert badge.is_visible() and badge.inner_text().lower() == "synthetic study"
            reveal = ".rv-panel.is-current .rv-reveal"
            page.wait_for_selector(reveal)
            size = fits(page, reveal)
            assert size["scroll"] <= size["client"], (width, candidate.alias, size)
            assert page.locator(reveal).evaluate(STICKING_OUT) == [], (width, candidate.alias)
            no_page_overflow(page)
        page.locator(".rv-panel.is-current .rv-reveal").screenshot(
            path=str(artifacts / f"study-reveal-{width}.png")
        )
        # The fix-request form's selects (long criterion names) stay inside the sidebar.
        page.goto(f"{server_url}/review/a/{open_.pk}/")
        switched(page)
        page.locator(".rv-panel.is-current .rv-fix-new > summary").click()
        form = page.locator(".rv-panel.is-current .rv-fix-form")
        form.wait_for()
        assert form.evaluate(STICKING_OUT) == [], width
        form.screenshot(path=str(artifacts / f"study-fix-form-{width}.png"))
        page.goto(f"{server_url}/review/a/{open_.pk}/compare")
        assert page.locator("h1 .synthetic-badge").inner_text().lower() == "synthetic study"
        no_page_overflow(page)
    # Nothing about who made a candidate or what others said comes with the badge.
    html = page.content()
    assert "synthetic: careful grader" not in html and "synthetic-careful" not in html
    assert errors == []


def test_the_staff_pages_of_the_study_say_synthetic_and_keep_tables_readable(
    browser: Any, server_url: str, artifacts: Path, study: Campaign
) -> None:
    StaffFactory.create(username="boss")
    page, errors = _logged_in(browser, server_url, "boss")
    for width in WIDTHS:
        page.set_viewport_size({"width": width, "height": 900})
        page.goto(f"{server_url}/dashboards/gate")
        for rater, _ in GRADERS:
            row = page.locator(f'tr[data-config="{rater.name}"]')
            assert row.locator(".synthetic-badge").is_visible(), rater.name
        # Every decision's figures, thresholds and date in view: the table fits its card, and
        # no figure, interval, threshold or date is broken over two lines.
        decisions = page.locator("section.card", has_text="Gate decisions").locator("table")
        size = decisions.evaluate("(e) => ({scroll: e.scrollWidth, client: e.clientWidth})")
        assert size["scroll"] <= decisions.evaluate("(e) => e.parentElement.clientWidth"), size
        assert decisions.evaluate(UNBROKEN) == [], width
        assert page.locator("#gate-decisions td.gate-missed").count() >= 1  # concordance
        for rater, _ in GRADERS:
            decided = page.locator(f'tr[data-config="{rater.name}"] td').last.inner_text()
            assert re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d", decided), decided
        no_page_overflow(page)
        page.screenshot(path=str(artifacts / f"study-gate-{width}.png"), full_page=True)

        page.goto(f"{server_url}/dashboards/audit?a={STUDY_RUN}@1&b={STUDY_RUN}@4")
        assert page.locator("h1 .synthetic-badge").is_visible()
        assert page.locator(".synthetic-note[data-synthetic-sides]").is_visible()
        no_page_overflow(page)

        page.goto(f"{server_url}/review/staff/{study.pk}/")
        assert page.locator("h1 .synthetic-badge").is_visible()
        # An assignment ("name (sentinel): Submitted (3 min 05 s)") is one unbroken line.
        broken = page.evaluate(
            """() => Array.from(document.querySelectorAll('.rv-assignment'))
                .filter((e) => e.getClientRects().length > 1).map((e) => e.textContent)"""
        )
        assert page.locator(".rv-assignment").count() > 40
        assert broken == [], (width, broken[:3])
        no_page_overflow(page)
        page.screenshot(path=str(artifacts / f"study-campaign-{width}.png"))
    assert errors == []
