"""The interactive API docs (Swagger UI) render in a real browser under the site's CSP, with
every asset from our own origin (drf-spectacular-sidecar; no CDN is reachable or allowed)."""

from __future__ import annotations

import pytest

from tests.browser.test_csp import CspWatch

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.django_db(transaction=True)]


def test_the_api_docs_render_from_local_assets_without_csp_violations(
    browser, server_url, artifacts
):
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    watch = CspWatch(context)
    requested: list[str] = []
    watch.page.on("request", lambda r: requested.append(r.url))
    watch.visit(f"{server_url}/api/v1/docs")
    page = watch.page
    page.wait_for_selector(".swagger-ui .opblock", timeout=15000)
    summaries = page.locator(".opblock-summary-path").all_inner_texts()
    assert any("/api/v1/training/groups" in s for s in summaries), summaries
    assert len(summaries) >= 12
    page.locator(".opblock-summary-path", has_text="/api/v1/labels").first.click()
    page.wait_for_selector(".parameters-col_name", timeout=5000)
    watch.collect()
    page.screenshot(path=str(artifacts / "api-docs.png"))
    foreign = [u for u in requested if not u.startswith(server_url) and not u.startswith("data:")]
    assert not foreign, foreign
    assert not watch.found, watch.found
    watch.assert_it_detects_a_violation()
    context.close()
