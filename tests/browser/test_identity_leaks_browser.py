"""The leak test in real Chromium: a reviewer opens the hostile group's review page, every
candidate, every trajectory (its fragments are fetched by the page's own script) and the
compare page, then fetches every same-origin URL the pages name. Every response the browser
receives, static files included, is grepped for every planted identity mark
(tests/security/identity_marks.py) in any case and separator style."""

from __future__ import annotations

from typing import Any

import pytest

from review.services.campaigns import campaign_create
from tests.browser.conftest import login, opened, switched
from tests.factories import StaffFactory, UserFactory
from tests.security.identity_marks import hostile_group_import, marks_in
from tests.security.test_identity_leaks import grader_run_with_marks

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

NAMED_URLS = """() => Array.from(document.querySelectorAll('[href],[src],[data-src],[action]'))
  .flatMap(e => [e.getAttribute('href'), e.getAttribute('src'), e.getAttribute('data-src'),
                 e.getAttribute('action')])
  .filter(u => u && u.startsWith('/') && !u.startsWith('/accounts/logout'))
  .map(u => u.split('#')[0])"""


def test_the_reviewers_browser_receives_no_identity_mark(
    browser: Any, server_url: str, artifacts: Any
) -> None:
    group = hostile_group_import()
    grader_run_with_marks(group)
    campaign_create(
        name="Leak test",
        created_by=StaffFactory.create(username="lead"),
        reviewers=[UserFactory.create(username="alice")],
        filters={},
    )
    ctx = browser.new_context(viewport={"width": 1440, "height": 900})
    page = ctx.new_page()
    received: list[tuple[str, bytes]] = []

    def on_response(response: Any) -> None:
        try:
            body = response.body()
        except Exception:  # redirects and aborted requests have no body
            body = b""
        received.append((response.url, body + repr(response.headers).encode()))

    page.on("response", on_response)
    login(page, server_url, "alice")
    page.click("form[action$='/next'] button")
    opened(page)
    tabs = page.locator(".rv-tab")
    assert tabs.count() == 3
    for i in range(tabs.count()):
        tabs.nth(i).click()
        switched(page)
        panel = page.locator(".rv-panel.is-current")
        with page.expect_response(lambda r: "/trajectory" in r.url):
            panel.locator("details.rv-traj summary").click()
        page.wait_for_function(
            "() => document.querySelector('.rv-panel.is-current details.rv-traj')"
            ".dataset.loaded === '1'"
        )
    page.screenshot(path=str(artifacts / "identity-leaks-review.png"), full_page=True)
    named = set(page.evaluate(NAMED_URLS))
    page.click("#rv-compare-link")
    page.wait_for_load_state("networkidle")
    named |= set(page.evaluate(NAMED_URLS))
    for url in sorted(named):
        response = page.request.get(server_url + url)
        received.append((url, response.body()))
    ctx.close()

    assert len(received) > 10
    leaked = {url: marks_in(body.decode("utf-8", "replace")) for url, body in received}
    assert {url: found for url, found in leaked.items() if found} == {}
    shown = b"".join(body for _, body in received).decode("utf-8", "replace")
    assert "agent-file-1" in shown and "[redacted]" in shown
