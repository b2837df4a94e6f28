"""A full blind review of the sample group by two reviewers in real Chromium: one with the
keyboard only (with a reload in the middle and a timed fix request), one with the mouse. Every
response the keyboard reviewer's browser receives is checked for leaks."""

from __future__ import annotations

import pytest

from grading.models import Group
from grading.services.demo import sample_load
from review.models import Assignment, FixRequest, Label
from review.services.campaigns import campaign_create
from tests.browser.conftest import expand_first, login, opened, switched
from tests.factories import StaffFactory, UserFactory
from tests.review.blind import forbidden_strings, grader_verdict_for, leaks, make_ids_distinctive

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
TIER_KEYS = "1213121312131213"
SAVED = "() => document.querySelector('.rv-panel.is-current .rv-save-status')"
SAVED += ".textContent.startsWith('Saved')"


@pytest.fixture
def setup(settings):
    settings.GAGAR_REVIEW_HEARTBEAT_MS = 250
    make_ids_distinctive()
    sample_load()
    group = Group.objects.get(external_id="sample-humanize-lite-1024")
    grader_verdict_for(group)
    alice = UserFactory.create(username="alice")
    bob = UserFactory.create(username="bob")
    campaign = campaign_create(
        name="Browser campaign",
        created_by=StaffFactory(username="lead"),
        reviewers=[alice, bob],
        filters={},
        overlap=2,
    )
    return group, campaign


def _watch(page):
    problems: list[str] = []
    page.on("pageerror", lambda e: problems.append(f"pageerror: {e}"))

    def on_dialog(dialog) -> None:
        problems.append(f"dialog: {dialog.message}")
        dialog.dismiss()

    page.on("dialog", on_dialog)
    return problems


def _record_responses(page, store):
    def on_response(response):
        if "/static/" in response.url:
            return
        try:
            body = response.text()
        except Exception:  # redirects and aborted requests have no body
            body = ""
        store.append((response.url, body + repr(response.headers)))

    page.on("response", on_response)


def test_two_reviewers_complete_a_blind_review(browser, server_url, artifacts, setup):
    group, _campaign = setup
    forbidden = forbidden_strings(group)

    # --- alice: keyboard only -----------------------------------------------------------------
    ctx = browser.new_context(viewport={"width": 1440, "height": 900})
    page = ctx.new_page()
    problems = _watch(page)
    seen: list[tuple[str, str]] = []
    _record_responses(page, seen)
    login(page, server_url, "alice")
    start = page.locator("form[action$='/next'] button")
    start.focus()
    page.keyboard.press("Enter")
    opened(page)
    assignment = Assignment.objects.get(reviewer__username="alice")
    # Shared hunks are marked in the diff itself (from the sidebar's list), not only listed.
    shared = page.locator(".rv-panel.is-current .rv-shared li[data-path]").count()
    marked = page.locator(".rv-panel.is-current td.d-ln[data-share]").count()
    assert 0 < marked <= shared
    page.screenshot(path=str(artifacts / "review-shared-hunks.png"))
    n = assignment.candidates.count()
    page.keyboard.press("?")
    assert page.locator("#rv-help").is_visible()
    page.screenshot(path=str(artifacts / "review-help.png"))
    page.keyboard.press("Escape")
    assert not page.locator("#rv-help").is_visible()

    for i in range(n):
        if i == n // 2:
            # Reload in the middle: drafts and the clock are on the server.
            page.reload()
            opened(page)
            current = page.locator(".rv-panel.is-current").get_attribute("data-alias")
            assert current == chr(ord("A") + i)
            assert page.locator(".rv-tab .rv-tab-tier").first.inner_text().startswith("T")
            # The file ticked as viewed on candidate A is still ticked: marks live on the server.
            assert page.locator("#cand-A .rv-viewed:checked").count() == 1
        page.keyboard.press("j")
        if i == 0:
            page.wait_for_timeout(1500)  # reading time before the first issue is found
            with page.expect_response(lambda r: r.url.endswith("/viewed") and r.ok):
                page.keyboard.press("v")
        page.keyboard.press("c")
        page.keyboard.type(f"Issue found on candidate {i}")
        page.keyboard.press("Tab")  # severity
        page.keyboard.type("blocking" if i == 0 else "minor")
        page.keyboard.press("Control+Enter")
        page.wait_for_function(
            "n => document.querySelectorAll('.rv-panel.is-current .rv-fix').length === n", arg=1
        )
        if i == 0:
            page.screenshot(path=str(artifacts / "review-keyboard-fix.png"))
        page.keyboard.press(TIER_KEYS[i])
        page.keyboard.press("r")
        for _ in range(5):
            page.keyboard.press("4")
            page.keyboard.press("Tab")
        page.keyboard.type("mergeable")  # the mergeability select's typeahead
        page.keyboard.press("Tab")
        page.keyboard.press("5")  # confidence
        page.keyboard.press("Escape")
        page.wait_for_function(SAVED)
        page.keyboard.press("]")
        switched(page)
    page.screenshot(path=str(artifacts / "review-keyboard-done.png"))
    page.keyboard.press("Shift+S")
    page.keyboard.press("Enter")
    page.wait_for_selector("#rv-submit", state="detached", timeout=10_000)
    page.screenshot(path=str(artifacts / "review-submitted.png"))

    assignment.refresh_from_db()
    assert assignment.status == Assignment.Status.SUBMITTED
    labels = Label.objects.filter(candidate__assignment=assignment)
    assert labels.count() == n and all(lb.confidence == 5 for lb in labels)
    assert all(lb.approach_suitability == 4 and lb.mergeability == "as_is" for lb in labels)
    first = (
        FixRequest.objects.filter(candidate__assignment=assignment).order_by("created_at").first()
    )
    assert first.severity == "blocking" and first.active_ms_before >= 1000
    assert assignment.active_ms >= first.active_ms_before
    assert problems == []
    bad = [(url, leaks(body, forbidden)) for url, body in seen]
    assert [b for b in bad if b[1]] == []
    assert any("/trajectory" not in url for url, _ in seen)
    ctx.close()

    # --- bob: mouse, with a first submit that the server refuses --------------------------------
    ctx = browser.new_context(viewport={"width": 1280, "height": 860})
    page = ctx.new_page()
    problems = _watch(page)
    login(page, server_url, "bob")
    page.click("text=Start the next group")
    opened(page)
    page.click("#rv-submit button")
    # Problems appear beside the field they concern (issue 17), not in a list at the top.
    page.wait_for_selector(".rv-panel.is-current .rv-field-error")
    assert "choose a tier" in page.locator(".rv-panel.is-current .rv-field-error").inner_text()
    tabs = page.locator(".rv-tab")
    for i in range(tabs.count()):
        tabs.nth(i).click()
        switched(page)
        panel = page.locator(".rv-panel.is-current")
        if i == 0:
            expand_first(panel)
            # A new-side line number opens the fix form on that line.
            panel.locator("tr[data-n] > td.d-ln:nth-child(3)").first.click()
            panel.locator(".rv-fix-form textarea").fill("Please add a test for this")
            panel.locator(".rv-fix-form button[type=submit]").click()
            page.wait_for_selector(".rv-panel.is-current .rv-fix")
            panel.locator("details.rv-traj summary").click()
            page.wait_for_selector(".rv-panel.is-current .rv-event")
            panel.locator(".rv-traj-search input").fill("pytest")
            panel.locator(".rv-traj-search button").click()
            page.wait_for_selector(".rv-panel.is-current .rv-traj-content >> text=match")
            page.screenshot(path=str(artifacts / "review-mouse-trajectory.png"))
        panel.locator(f".rv-tier input[value=t{1 + i % 3}]").check()
        for row in panel.locator(".rv-scores .rv-dots").all():
            row.locator("span", has_text="3").click()
        panel.locator("select[name=mergeability]").select_option("after_minor_fixes")
        page.wait_for_function(SAVED)
    page.click("#rv-submit button")
    page.wait_for_selector("#rv-submit", state="detached", timeout=10_000)
    page.screenshot(path=str(artifacts / "review-mouse-submitted.png"), full_page=False)
    assert problems == []
    bob_assignment = Assignment.objects.get(reviewer__username="bob")
    assert bob_assignment.status == Assignment.Status.SUBMITTED
    assert bob_assignment.group_id == assignment.group_id
    ctx.close()
