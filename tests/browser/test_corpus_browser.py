"""The hostile corpus (tests/security/corpus.py) in real Chromium: the review page (with its
fragments) and the admin pages showing every payload open no dialog, run no injected script and
contain no injected element."""

from __future__ import annotations

from typing import Any

import pytest

from grading.models import Attempt, Group, Task
from review.services.campaigns import campaign_create
from tests.browser.conftest import login, opened, switched
from tests.factories import StaffFactory, UserFactory
from tests.importers.helpers import jsonl
from tests.security.corpus import HUGE, PAYLOADS, fits_a_name
from tests.security.hostile_text import SHOWN_TEXT_JS, raw_in
from tests.security.test_corpus import api_client, hostile_group, post_bundle

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.django_db(transaction=True)]

# Anything only an executed payload could have put in the page.
INJECTED = (
    "img[src='x'], iframe, object, embed, svg[onload], [onmouseover], [onerror], "
    "a[href^='javascript'], script:not([src]):not([type='application/json']):not([nonce])"
)


class Watch:
    def __init__(self, page: Any) -> None:
        self.page = page
        self.fired: list[str] = []
        page.on("dialog", self._dialog)
        page.on("pageerror", lambda e: self.fired.append(f"pageerror: {e}"))

    def _dialog(self, dialog: Any) -> None:
        self.fired.append(f"dialog on {self.page.url}: {dialog.message}")
        dialog.dismiss()

    def check(self, where: str) -> None:
        self.page.wait_for_timeout(300)  # give an injected handler the chance to run
        injected = self.page.eval_on_selector_all(INJECTED, "els => els.map(e => e.outerHTML)")
        assert not injected, (where, injected[:3])
        assert not self.fired, (where, self.fired)
        # The bidi and NUL payloads: shown as marks in the page's text, never raw.
        assert raw_in(self.page.evaluate(SHOWN_TEXT_JS)) == [], where


def _import_corpus() -> int:
    client = api_client()
    names = [n for n in PAYLOADS if fits_a_name(n)] + [HUGE]
    for name in names:
        obj = hostile_group(name, PAYLOADS[name], names=fits_a_name(name))
        assert post_bundle(client, jsonl(obj)).status_code == 201
    return len(names)


def test_the_review_page_renders_every_payload_inert(browser: Any, server_url: str) -> None:
    count = _import_corpus()
    reviewers = [UserFactory.create(username=f"r{n}") for n in range(count)]
    campaign_create(name="Hostile", created_by=None, reviewers=reviewers, filters={}, overlap=1)
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    for reviewer in reviewers:
        page = context.new_page()
        watch = Watch(page)
        login(page, server_url, reviewer.username)
        watch.check("queue")
        page.click("text=Start the next group")
        opened(page)
        watch.check("review page")
        for _ in range(2):  # every candidate: its diff, then its trajectory fragment
            page.keyboard.press("t")
            page.wait_for_selector(".rv-panel.is-current .rv-event")
            watch.check("trajectory")
            page.keyboard.press("]")
            switched(page)
        page.goto(page.url.split("#")[0] + "compare")
        watch.check("compare")
        context.clear_cookies()
        page.close()
    context.close()


def test_admin_pages_render_every_payload_inert(browser: Any, server_url: str) -> None:
    _import_corpus()
    StaffFactory.create(username="root", is_superuser=True)
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    watch = Watch(page)
    login(page, server_url, "root")
    urls = ["/admin/grading/task/", "/admin/grading/attempt/", "/admin/grading/group/"]
    urls += [
        f"/admin/grading/task/{pk}/change/" for pk in Task.objects.values_list("pk", flat=True)
    ]
    for a in Attempt.objects.filter(external_id__startswith="a-").select_related("trajectory"):
        urls.append(f"/admin/grading/attempt/{a.pk}/change/")
        urls.append(f"/admin/grading/patch/{a.patch_id}/change/")
        urls.append(f"/admin/grading/trajectory/{a.trajectory.pk}/change/")
    urls += [
        f"/admin/grading/group/{pk}/change/" for pk in Group.objects.values_list("pk", flat=True)
    ]
    for url in urls:
        response = page.goto(server_url + url)
        assert response is not None and response.status == 200, url
        watch.check(url)
    context.close()
