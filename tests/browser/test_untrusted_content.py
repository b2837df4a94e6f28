"""Untrusted content renders inert in a real browser: script tags, event-handler attributes,
`javascript:` URLs and broken HTML in problem statements, file names, diffs, trajectories and
test output fire no dialog, run no script and inject no element."""

from __future__ import annotations

import copy

import pytest

from grading.domain.bundle import group_from_object
from grading.models import Group
from grading.sample.build import load_committed_group
from grading.services.imports import groups_import
from review.services.campaigns import campaign_create
from review.services.queue import assignment_next
from tests.browser.conftest import login, switched
from tests.factories import UserFactory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

PAYLOAD = (
    '<script>window.__xss=1;alert("script")</script>'
    "<img src=x onerror=\"window.__xss=2;alert('img')\">"
    '<a id="xss-link" href="javascript:alert(\'link\')">click</a>'
    "</td></tr></table></pre></details>"
    "<svg onload=\"alert('svg')\"></svg><iframe src=\"javascript:alert('iframe')\"></iframe>"
    '<b id="xss-bold">bold</b><!-- '
)
HOSTILE_NAME = 'x"><img src=x onerror=alert(1)>.py'
INJECTED = (
    "img[src='x'], #xss-link, #xss-bold, svg, iframe, "
    "script:not([src]):not([type='application/json'])"
)


def _hostile_group() -> Group:
    obj = copy.deepcopy(load_committed_group())
    obj["group_id"] = "hostile-group"
    obj["run"] = "hostile-run"
    obj["task"]["id"] = "hostile-task"
    obj["task"]["repo_url"] = ""
    obj["task"]["problem_statement"] = "Problem " + PAYLOAD
    attempts = [a for a in obj["attempts"] if a["status"] == "valid" and a["test_reward"] > 0][:2]
    for a in attempts:
        a["test_output"] = "output " + PAYLOAD
        # The first event the reviewer is shown (a system prompt is withheld whole).
        shown = next(e for e in a["trajectory"]["events"] if e.get("role") != "system")
        shown["text"] = "thought " + PAYLOAD
        shown["args"] = PAYLOAD
    attempts[0]["patch"] = (
        f"diff --git a/{HOSTILE_NAME} b/{HOSTILE_NAME}\n"
        f"new file mode 100644\n--- /dev/null\n+++ b/{HOSTILE_NAME}\n@@ -0,0 +1,3 @@\n"
        f"+{PAYLOAD}\n+url = 'javascript:alert(1)'\n+</td><td onmouseover=alert(1)>\n"
    )
    obj["attempts"] = attempts
    report = groups_import(records=[group_from_object(obj, source="hostile")])
    assert not report.problems, report.problems
    return Group.objects.get(external_id="hostile-group")


def test_hostile_content_renders_inert(browser, server_url, artifacts):
    group = _hostile_group()
    user = UserFactory.create(username="alice")
    campaign = campaign_create(
        name="Hostile", created_by=None, reviewers=[user], filters={"run": group.step.run_id}
    )
    assignment = assignment_next(campaign=campaign, reviewer=user)
    ctx = browser.new_context(viewport={"width": 1280, "height": 900})
    page = ctx.new_page()
    fired: list[str] = []

    def on_dialog(dialog) -> None:
        fired.append(dialog.message)
        dialog.dismiss()

    page.on("dialog", on_dialog)
    page.on("pageerror", lambda e: fired.append(f"pageerror: {e}"))
    login(page, server_url, "alice")

    def check(where: str) -> None:
        page.wait_for_timeout(300)  # give any injected handler the chance to run
        assert fired == [], where
        assert page.evaluate("() => window.__xss === undefined"), where
        assert page.locator(INJECTED).count() == 0, where

    page.goto(f"{server_url}/review/a/{assignment.pk}/")
    check("review page")
    assert "<script>window.__xss=1" in page.locator(".rv-problem").inner_text()
    for tab in page.locator(".rv-tab").all():
        tab.click()
        switched(page)
        panel = page.locator(".rv-panel.is-current")
        panel.locator("details.rv-tests summary").click()
        panel.locator("details.rv-traj summary").click()
        page.wait_for_selector(".rv-panel.is-current .rv-event")
        for row in panel.locator("td.d-code").all()[:20]:
            row.hover()
        check(f"candidate {tab.inner_text()}")
    events = page.locator(".rv-panel.is-current .rv-event")
    assert "withheld" in events.first.inner_text()
    assert events.nth(1).inner_text().count("<script>") >= 1
    page.screenshot(path=str(artifacts / "hostile-review.png"))
    first = page.locator(".rv-tab").first
    first.click()
    switched(page)
    page.keyboard.press("j")
    page.keyboard.press("c")
    page.keyboard.type("fix the file with a hostile name")
    page.keyboard.press("Control+Enter")
    page.wait_for_selector(".rv-panel.is-current .rv-fix")
    check("fix request on a hostile file name")
    page.goto(f"{server_url}/review/a/{assignment.pk}/compare")
    check("compare page")
    page.screenshot(path=str(artifacts / "hostile-compare.png"))
    token = assignment.candidates.first().token
    page.goto(f"{server_url}/review/a/{assignment.pk}/c/{token}/trajectory?q=script")
    check("trajectory search page")
    ctx.close()
