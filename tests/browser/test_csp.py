"""The Content-Security-Policy is satisfied in a real browser: every page each role sees, with its
interactions (expanding context, the help overlay, switching candidates, compare, trajectories,
the admin's grader transcripts), raises no `securitypolicyviolation` and logs no CSP error."""

from __future__ import annotations

from typing import Any

import pytest
from django.conf import settings

from grading.models import Attempt, GraderRun, Group
from grading.services.demo import sample_load
from grading.services.grader_runs import (
    grader_config_default,
    grader_run_execute,
    grader_runs_request,
)
from review.services.campaigns import campaign_create
from tests.browser.conftest import expand_first, login, opened, switched
from tests.factories import StaffFactory, UserFactory

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.django_db(transaction=True)]

# Runs before any page script: violations are kept on the window, read back after each step.
RECORD_VIOLATIONS = """
window.__csp = [];
document.addEventListener("securitypolicyviolation", (e) => {
  window.__csp.push([e.violatedDirective, e.blockedURI, e.sourceFile, e.lineNumber,
                     (e.sample || "").slice(0, 80)].join(" "));
});
"""


class CspWatch:
    def __init__(self, context: Any) -> None:
        context.add_init_script(RECORD_VIOLATIONS)
        self.page = context.new_page()
        self.found: list[str] = []
        self.visited: list[str] = []
        self.page.on("console", self._console)
        self.page.on("pageerror", lambda e: self.found.append(f"pageerror: {e}"))

    def _console(self, message: Any) -> None:
        if "Content Security Policy" in message.text or "Content-Security-Policy" in message.text:
            self.found.append(f"console on {self.page.url}: {message.text}")

    def collect(self) -> None:
        # Give late handlers (fragments, deferred scripts) a moment to run and report.
        self.page.wait_for_timeout(250)
        for violation in self.page.evaluate("window.__csp || []"):
            self.found.append(f"{self.page.url}: {violation}")
        self.page.evaluate("window.__csp = []")

    def assert_it_detects_a_violation(self) -> None:
        """The watch itself works: an inline style attribute set from script is reported."""
        self.page.evaluate("document.body.setAttribute('style', 'color: red')")
        self.page.wait_for_timeout(250)
        caught = self.page.evaluate("window.__csp || []")
        assert any("style-src" in v for v in caught), caught
        self.page.evaluate("window.__csp = []")
        self.found.clear()

    def visit(self, url: str) -> None:
        response = self.page.goto(url)
        assert response is not None and response.status == 200, (url, response and response.status)
        assert "content-security-policy" in response.headers, url
        self.page.wait_for_load_state("networkidle")
        self.visited.append(url)
        self.collect()


def _graded_sample() -> tuple[Group, GraderRun]:
    sample_load(grade=False)
    group = Group.objects.get(external_id="sample-humanize-lite-1024")
    (run,) = grader_runs_request(groups=[group], config=grader_config_default())
    # The heuristic grader, inline: the admin then shows a real transcript and verdict.
    grader_run_execute(run_id=run.pk, worker="csp-test")
    run.refresh_from_db()
    assert run.status == GraderRun.Status.SUCCEEDED, run.failure_reason
    return group, run


@pytest.fixture
def sandbox_off(settings: Any) -> None:
    settings.GAGAR_SANDBOX = "none"


def test_reviewer_pages_and_interactions_raise_no_csp_violation(
    browser: Any, server_url: str, sandbox_off: None
) -> None:
    _graded_sample()
    reviewer = UserFactory.create(username="alice")
    campaign_create(name="CSP", created_by=None, reviewers=[reviewer], filters={}, overlap=1)
    context = browser.new_context(viewport={"width": 1440, "height": 900})
    watch = CspWatch(context)
    page = watch.page
    watch.visit(f"{server_url}/accounts/login/")
    watch.assert_it_detects_a_violation()
    login(page, server_url, "alice")
    watch.collect()
    watch.visit(f"{server_url}/review/")
    page.click("text=Start the next group")
    opened(page)
    watch.collect()
    review_url = page.url

    # The folded rows are fetched: collected once they are in (a fixed pause could end first).
    expanded = expand_first(page.locator(".rv-panel.is-current"))
    assert expanded, "the sample diff has collapsed context to expand"
    watch.collect()
    page.keyboard.press("?")
    assert page.locator("#rv-help").is_visible()
    watch.collect()
    page.keyboard.press("Escape")
    first = page.locator(".rv-panel.is-current").get_attribute("data-alias")
    page.keyboard.press("]")
    switched(page)
    page.wait_for_function(
        "a => document.querySelector('.rv-panel.is-current').dataset.alias !== a", arg=first
    )
    watch.collect()
    page.keyboard.press("t")  # the trajectory, fetched as a fragment
    page.wait_for_selector(".rv-panel.is-current .rv-event")
    watch.collect()
    page.keyboard.press("1")  # a tier: autosave round trip
    page.wait_for_function(
        "() => document.querySelector('.rv-panel.is-current .rv-save-status')"
        ".textContent.startsWith('Saved')"
    )
    watch.collect()
    watch.visit(review_url.split("#")[0] + "compare")
    # The first visible one: a file only one candidate changes is listed folded (<details>).
    compare_expand = page.locator("button.d-expand:visible").first
    if compare_expand.count():
        compare_expand.click()
        watch.collect()
    context.close()
    assert len(watch.visited) >= 3
    assert not watch.found, "\n".join(sorted(set(watch.found)))


def test_staff_and_admin_pages_raise_no_csp_violation(
    browser: Any, server_url: str, sandbox_off: None
) -> None:
    group, run = _graded_sample()
    StaffFactory.create(username="root", is_superuser=True)
    reviewer = UserFactory.create(username="bob")
    campaign = campaign_create(name="CSP", created_by=None, reviewers=[reviewer], filters={})
    attempt = Attempt.objects.filter(group=group).order_by("index").first()
    assert attempt is not None
    context = browser.new_context(viewport={"width": 1440, "height": 900})
    watch = CspWatch(context)
    watch.visit(f"{server_url}/accounts/login/")
    watch.assert_it_detects_a_violation()
    login(watch.page, server_url, "root")
    watch.collect()
    pages = [
        "/review/staff/",
        "/review/staff/new",
        f"/review/staff/{campaign.pk}/",
        "/ops/",
        "/admin/",
        "/admin/grading/group/",
        f"/admin/grading/group/{group.pk}/change/",
        "/admin/grading/attempt/",
        f"/admin/grading/attempt/{attempt.pk}/change/",
        "/admin/grading/graderrun/",
        f"/admin/grading/graderrun/{run.pk}/change/",
        "/admin/grading/groupadvantages/lambda-cap/",
        "/admin/review/campaign/",
        f"/admin/review/campaign/{campaign.pk}/change/",
        "/admin/auth/user/",
        "/admin/auth/user/add/",
    ]
    if "review.urls_dashboards" in _included_urlconfs():
        pages += ["/dashboards/", "/dashboards/audit", "/dashboards/export"]
    for path in pages:
        watch.visit(server_url + path)
    # The admin's own scripts: a changelist's action bar and a collapsible fieldset.
    watch.visit(f"{server_url}/admin/grading/group/")
    checkbox = watch.page.locator("input.action-select").first
    if checkbox.count():
        checkbox.check()
        watch.collect()
    context.close()
    assert not watch.found, "\n".join(sorted(set(watch.found)))


def _included_urlconfs() -> set[str]:
    from django.urls import URLResolver, get_resolver

    return {
        str(getattr(entry.urlconf_module, "__name__", ""))
        for entry in get_resolver(settings.ROOT_URLCONF).url_patterns
        if isinstance(entry, URLResolver)
    }
