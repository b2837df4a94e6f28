"""The candidate tabs never cover content (issue 17: after tiering a candidate "exploit / test
tampering" and reloading, the tabs wrapped to two rows at 1440 px and the sticky bar covered
the sidebar heading, the file header and "Show N unchanged lines"). Checked at 1280–1920 px,
with a screenshot at each width."""

from __future__ import annotations

import pytest

from grading.models import Group
from grading.services.demo import sample_load
from review.services.campaigns import campaign_create
from review.services.queue import assignment_next
from review.services.reviewing import label_save
from tests.browser.conftest import login, opened
from tests.factories import UserFactory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

GEOMETRY = """() => {
  const bar = document.querySelector('.rv-tabs').getBoundingClientRect();
  const tops = [...document.querySelectorAll('.rv-tab')]
    .map(t => Math.round(t.getBoundingClientRect().top));
  return {barBottom: bar.bottom, barHeight: bar.height, rows: new Set(tops).size};
}"""
TOP_OF = "(sel) => document.querySelector(sel).getBoundingClientRect().top"


@pytest.fixture
def exploit_tiered():
    sample_load()
    alice = UserFactory.create(username="alice")
    campaign = campaign_create(
        name="Layout", created_by=None, reviewers=[alice], filters={}, overlap=1
    )
    assignment = assignment_next(campaign=campaign, reviewer=alice)
    assert Group.objects.filter(pk=assignment.group_id).exists()
    for c in assignment.candidates.all():
        label_save(candidate=c, values={"tier": "exploit"})
    return assignment


@pytest.mark.parametrize("width", [1280, 1440, 1920])
def test_tabs_stay_one_row_and_cover_nothing(browser, server_url, artifacts, exploit_tiered, width):
    page = browser.new_page(viewport={"width": width, "height": 900})
    login(page, server_url, "alice")
    page.goto(f"{server_url}/review/a/{exploit_tiered.pk}/")
    opened(page)
    geometry = page.evaluate(GEOMETRY)
    assert geometry["rows"] == 1, geometry
    # Scrolled down, the sticky sidebar's heading starts below the sticky tabs.
    page.mouse.wheel(0, 600)
    page.wait_for_timeout(200)
    geometry = page.evaluate(GEOMETRY)
    heading = page.evaluate(TOP_OF, ".rv-panel.is-current .rv-side h3")
    assert heading >= geometry["barBottom"], (heading, geometry)
    # Jumping to a file or to collapsed context leaves its header in view, not under the tabs.
    for target in (".rv-panel.is-current .rv-file", ".rv-panel.is-current button.d-expand"):
        if not page.locator(target).count():
            continue
        page.evaluate(f"document.querySelector('{target}').scrollIntoView({{block: 'start'}})")
        page.wait_for_timeout(100)
        top = page.evaluate(TOP_OF, target)
        assert top >= geometry["barBottom"], (target, top, geometry)
    page.screenshot(path=str(artifacts / f"review-tabs-{width}.png"))
    page.close()
