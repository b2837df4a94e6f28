"""The agreement dashboard in real Chromium: computed snapshot, charts drawn, no CSP violation,
filters applied, a CSV downloaded; screenshots go to test-artifacts/."""

from __future__ import annotations

import pytest

from review.models import StatsSnapshot
from tests.analytics.conftest import run_worker
from tests.analytics.factories import grade_group
from tests.analytics.scenario import rich_study
from tests.browser.conftest import login
from tests.factories import StaffFactory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def _watch(page) -> list[str]:
    problems: list[str] = []
    page.on("pageerror", lambda e: problems.append(f"pageerror: {e}"))
    # CSP violations are reported as console errors; failed loads are checked by status below.
    page.on(
        "console",
        lambda m: (
            problems.append(f"console: {m.text}")
            if m.type == "error" and not m.text.startswith("Failed to load resource")
            else None
        ),
    )
    page.on(
        "response",
        lambda r: (
            problems.append(f"{r.status} {r.url}")
            if r.status >= 400 and not r.url.endswith("/favicon.ico")
            else None
        ),
    )
    return problems


def test_it_draws_the_dashboard(browser, server_url, artifacts, monkeypatch):
    monkeypatch.setattr("review.tasks.compute_snapshot_task.apply_async", lambda **kw: None)
    rich_study()
    StaffFactory(username="lead")
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    problems = _watch(page)
    login(page, server_url, "lead")

    page.goto(f"{server_url}/dashboards/")
    assert page.locator("#computing").is_visible()
    page.screenshot(path=str(artifacts / "dashboard-computing.png"))
    assert run_worker() == 1

    page.goto(f"{server_url}/dashboards/")
    assert "Computed at" in page.locator(".status").inner_text()
    kappa = page.locator('[data-stat="kappa"] .stat-value').inner_text()
    expected = StatsSnapshot.objects.get().payload["headline"]["kappa"]["estimate"]
    assert kappa == f"{expected:.3f}"
    assert page.locator("figure.chart svg").count() >= 8
    # T1–T3 and exploit on both axes (issue 17: exploit candidates were dropped from a 3×3).
    assert page.locator("svg rect.cell").count() == 16
    page.screenshot(path=str(artifacts / "dashboard.png"), full_page=True)

    # A filter is a new slice: computing first, then its own numbers.
    page.select_option("select[name=run]", "gagar")
    page.click("form.filters button[type=submit]")
    page.wait_for_load_state()
    assert "run=gagar" in page.url
    run_worker()
    page.reload()
    assert "Computed at" in page.locator(".status").inner_text()

    with page.expect_download() as info:
        page.click("figcaption a.csv >> nth=0")
    assert info.value.suggested_filename.endswith(".csv")

    page.goto(f"{server_url}/dashboards/audit?a=baseline&b=gagar&source=humans")
    run_worker()
    page.reload()
    assert page.locator('[data-stat="win_rate"] .stat-value').inner_text() != "—"
    page.screenshot(path=str(artifacts / "dashboard-audit.png"), full_page=True)
    assert problems == []


# Every text of a chart inside its drawing (user units of the viewBox), measured by Chromium.
TEXT_OUTSIDE = """() => {
  const out = [];
  for (const svg of document.querySelectorAll('figure.chart svg[viewBox]')) {
    const width = svg.viewBox.baseVal.width;
    for (const t of svg.querySelectorAll('text')) {
      const b = t.getBBox();
      if (b.x < -0.5 || b.x + b.width > width + 0.5) out.push(t.textContent);
    }
  }
  return out;
}"""


@pytest.mark.parametrize("width", [1280, 1920])
def test_a_configuration_without_an_interval_says_so_inside_the_chart(
    browser, server_url, artifacts, monkeypatch, width
):
    """QA: a one-task configuration was a dot (at 0.00 in the κ chart, reading as κ = 0) and
    its "too few tasks for an interval" note was cut off at the chart's right edge."""
    from grading.models import Group

    monkeypatch.setattr("review.tasks.compute_snapshot_task.apply_async", lambda **kw: None)
    rich_study()
    # One more configuration, graded on one reviewed group: an estimate but no interval.
    group = Group.objects.order_by("pk").first()
    assert group is not None
    atts = list(group.attempts.filter(test_reward=1.0).order_by("index"))
    grade_group(group, atts, [1, 1, 2, 3][: len(atts)], config="one-task-grader")
    StaffFactory(username="lead")
    page = browser.new_page(viewport={"width": width, "height": 1000})
    problems = _watch(page)
    login(page, server_url, "lead")
    page.goto(f"{server_url}/dashboards/")
    assert run_worker() == 1
    page.goto(f"{server_url}/dashboards/")
    charts = page.locator("figure.chart").filter(has_text="per grader configuration")
    assert charts.count() == 2
    for i in range(2):
        chart = charts.nth(i)
        note = chart.locator("text.no-estimate")
        assert note.count() == 1
        assert note.text_content().startswith("no estimate: too few tasks for an interval (1 task")
        chart.screenshot(path=str(artifacts / f"per-config-{i}-{width}.png"))
    assert page.evaluate(TEXT_OUTSIDE) == []
    assert problems == []
    page.close()
