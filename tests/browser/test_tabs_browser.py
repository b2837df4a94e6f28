"""The candidate tabs as a WAI-ARIA tab widget, in real Chromium: roles and states the script
adds, Left/Right/Home/End moving focus and the candidate shown (automatic activation), Enter and
Space showing the focused tab's candidate without scrolling the page, the page's shortcuts still
acting once from a tab and never from a text field, and without script the plain links of before.
Modified clicks (Ctrl/Cmd, Shift, the middle button) are the browser's: they open the candidate's
own page of the review, which never saves its out-of-date form over what another page saved. The
focused tab's ring is never clipped by the sideways-scrolling bar."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from grading.services.demo import sample_load
from review.models import Assignment, Label
from review.services.campaigns import campaign_create
from review.services.queue import assignment_next
from tests.browser.conftest import login, opened, switched
from tests.factories import UserFactory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

# What the tab bar says about each tab and its panel, in display order.
TABS_STATE = """() => Array.from(document.querySelectorAll('.rv-tab')).map((t) => {
  const panel = document.getElementById(t.getAttribute('aria-controls'));
  return {
    id: t.id, role: t.getAttribute('role'), selected: t.getAttribute('aria-selected'),
    tabindex: t.getAttribute('tabindex'), controls: t.getAttribute('aria-controls'),
    panelRole: panel && panel.getAttribute('role'),
    panelLabelledBy: panel && panel.getAttribute('aria-labelledby'),
    panelAlias: panel && panel.dataset.alias,
  };
})"""
FOCUSED = "() => document.activeElement.id"
CURRENT = "() => document.querySelector('.rv-panel.is-current').dataset.alias"


@pytest.fixture
def assignment() -> Assignment:
    sample_load()
    alice = UserFactory.create(username="alice")
    campaign = campaign_create(
        name="Tabs", created_by=None, reviewers=[alice], filters={}, overlap=1
    )
    assignment = assignment_next(campaign=campaign, reviewer=alice)
    assert assignment is not None
    return assignment


def _aliases(assignment: Assignment) -> list[str]:
    return [c.alias for c in assignment.candidates.order_by("position")]


def _open(
    browser: Any, server_url: str, assignment: Assignment, errors: list[str], **context: Any
) -> Any:
    ctx = browser.new_context(viewport={"width": 1440, "height": 900}, **context)
    page = ctx.new_page()
    page.on("pageerror", lambda e: errors.append(str(e)))
    login(page, server_url, "alice")
    page.goto(f"{server_url}/review/a/{assignment.pk}/")
    return page


def _selected(page: Any, alias: str) -> None:
    """Candidate `alias`'s tab is the selected one and the one Tab reaches (roving tabindex)."""
    state = {t["panelAlias"]: t for t in page.evaluate(TABS_STATE)}
    assert [a for a, t in state.items() if t["selected"] == "true"] == [alias]
    assert [a for a, t in state.items() if t["tabindex"] == "0"] == [alias]
    assert all(t["tabindex"] == "-1" for a, t in state.items() if a != alias)
    # The one panel assistive technology is given is the one on screen, named by its tab.
    panels = page.get_by_role("tabpanel")
    assert panels.count() == 1
    assert panels.first.get_attribute("id") == f"cand-{alias}"
    assert page.get_by_role("tabpanel", name=re.compile(rf"^Candidate {alias}\b")).count() == 1


def _on(page: Any, alias: str) -> None:
    """Focus is on candidate `alias`'s tab, its panel is shown and the tab bar says so."""
    page.wait_for_function(f"() => document.activeElement.id === 'cand-{alias}-tab'")
    switched(page)
    assert page.evaluate(CURRENT) == alias
    _selected(page, alias)


def test_the_tabs_carry_the_tab_pattern_with_anonymous_ids(
    browser: Any, server_url: str, assignment: Assignment
) -> None:
    aliases = _aliases(assignment)
    assert len(aliases) >= 3  # wrapping and Home/End need a middle
    errors: list[str] = []
    page = _open(browser, server_url, assignment, errors)
    opened(page)
    tablist = page.get_by_role("tablist", name="Candidates")
    assert tablist.count() == 1
    tabs = tablist.get_by_role("tab")
    assert tabs.count() == len(aliases)
    for alias, tab in zip(aliases, tabs.all(), strict=True):
        # The name is the anonymous alias (and the reviewer's own tier, once set), nothing else.
        assert re.fullmatch(rf"Candidate {alias}( T\S+)?", tab.inner_text().strip())
    state = page.evaluate(TABS_STATE)
    assert [t["panelAlias"] for t in state] == aliases
    for alias, t in zip(aliases, state, strict=True):
        assert t["role"] == "tab" and t["panelRole"] == "tabpanel"
        assert t["id"] == f"cand-{alias}-tab" and t["controls"] == f"cand-{alias}"
        assert t["panelLabelledBy"] == t["id"]
    _selected(page, aliases[0])
    assert errors == []
    page.context.close()


def test_arrows_home_and_end_move_focus_and_the_candidate(
    browser: Any, server_url: str, artifacts: Path, assignment: Assignment
) -> None:
    aliases = _aliases(assignment)
    first, second, last = aliases[0], aliases[1], aliases[-1]
    errors: list[str] = []
    page = _open(browser, server_url, assignment, errors)
    opened(page)
    page.locator(f"#cand-{first}-tab").focus()
    page.keyboard.press("ArrowRight")
    _on(page, second)
    page.keyboard.press("ArrowLeft")
    _on(page, first)
    page.keyboard.press("ArrowLeft")  # wraps to the last
    _on(page, last)
    page.keyboard.press("ArrowRight")  # and back round to the first
    _on(page, first)
    page.keyboard.press("End")
    _on(page, last)
    # On the last tab already: End moves nothing, and is not the page's scroll to the bottom.
    page.keyboard.press("End")
    _on(page, last)
    assert page.evaluate("() => window.scrollY") == 0
    page.keyboard.press("Home")
    _on(page, first)
    page.keyboard.press("ArrowRight")
    _on(page, second)
    assert page.evaluate("() => window.location.hash") == f"#cand-{second}"
    # The focus ring of the selected (accent-filled) tab is not the colour it rings.
    ring, fill = page.evaluate(
        "() => { const s = getComputedStyle(document.activeElement);"
        " return [s.outlineColor, s.backgroundColor]; }"
    )
    assert ring != fill, ring
    page.screenshot(path=str(artifacts / "review-tabs-focused-1440.png"))
    # Roving tabindex: Tab leaves the bar into the panel, Shift+Tab comes back to the selected tab.
    page.keyboard.press("Tab")
    assert not page.evaluate(FOCUSED).endswith("-tab")
    in_panel = page.evaluate("() => document.activeElement.closest('.rv-panel').dataset.alias")
    assert in_panel == second
    page.keyboard.press("Shift+Tab")
    assert page.evaluate(FOCUSED) == f"cand-{second}-tab"
    assert errors == []
    page.context.close()


def test_enter_and_space_show_the_focused_tab_and_never_scroll_the_page(
    browser: Any, server_url: str, artifacts: Path, assignment: Assignment
) -> None:
    second, third = _aliases(assignment)[1:3]
    errors: list[str] = []
    page = _open(browser, server_url, assignment, errors)
    opened(page)
    # Room to scroll, or a Space that scrolled would go unseen.
    assert page.evaluate("() => document.documentElement.scrollHeight > window.innerHeight + 200")
    # A tab can hold focus without being selected (a click's focus before its switch, or a
    # script's): Space and Enter on it show its candidate, in place.
    page.locator(f"#cand-{second}-tab").focus()
    page.keyboard.press("Space")
    _on(page, second)
    assert page.locator(f"#cand-{second}").is_visible()
    assert page.evaluate("() => window.scrollY") == 0
    assert page.evaluate("() => window.location.hash") == f"#cand-{second}"
    page.locator(f"#cand-{third}-tab").focus()
    page.keyboard.press("Enter")
    _on(page, third)
    assert page.evaluate("() => window.location.hash") == f"#cand-{third}"
    # Read down the page, back on the selected tab (the bar is sticky): Space there changes
    # nothing, the page stays where it was.
    page.evaluate("() => window.scrollTo(0, 300)")
    page.locator(f"#cand-{third}-tab").focus()
    page.keyboard.press("Space")
    _on(page, third)
    assert page.evaluate("() => window.scrollY") == 300
    page.screenshot(path=str(artifacts / "review-tabs-space-1440.png"))
    # Shift+Space is still the page's own (scroll up): the tabs take only plain keys.
    page.keyboard.press("Shift+Space")
    page.wait_for_function("() => window.scrollY < 300")
    _selected(page, third)
    assert errors == []
    page.context.close()


def test_shortcuts_act_once_from_a_tab_and_never_while_typing(
    browser: Any, server_url: str, assignment: Assignment
) -> None:
    first, second, third = _aliases(assignment)[:3]
    errors: list[str] = []
    page = _open(browser, server_url, assignment, errors)
    opened(page)
    page.locator(f"#cand-{first}-tab").focus()
    # "]" is the page's own next-candidate key: from a tab it moves one candidate, not two,
    # and focus goes along to the tab now selected.
    page.keyboard.press("]")
    _on(page, second)
    # A labelling key still labels the candidate shown while focus is on its tab.
    page.keyboard.press("2")
    page.wait_for_function(
        "() => document.querySelector('.rv-panel.is-current .rv-save-status')"
        ".textContent.startsWith('Saved')"
    )
    assert page.locator(".rv-panel.is-current .rv-tier input[value=t2]").is_checked()
    assert page.locator(f"#cand-{second}-tab .rv-tab-tier").inner_text().startswith("T2")
    # In a text field, arrows, Home/End and shortcut keys are text.
    page.keyboard.press("c")  # opens the fix request form
    textarea = page.locator(".rv-panel.is-current .rv-fix-form textarea")
    textarea.wait_for()
    textarea.focus()
    page.keyboard.type("a]b")
    for key in ("ArrowLeft", "Home", "End", "ArrowRight"):
        page.keyboard.press(key)
    page.keyboard.type("j[")
    assert textarea.input_value() == "a]bj["
    assert page.evaluate(CURRENT) == second
    assert page.evaluate("() => document.activeElement.tagName") == "TEXTAREA"
    # Arrows on the tab bar stay there: no shortcut and no second move from them.
    page.keyboard.press("Escape")
    page.locator(f"#cand-{second}-tab").focus()
    page.keyboard.press("ArrowRight")
    _on(page, third)
    assert errors == []
    page.context.close()


def test_without_script_the_tabs_are_plain_links_to_each_candidate(
    browser: Any, server_url: str, artifacts: Path, assignment: Assignment
) -> None:
    aliases = _aliases(assignment)
    page = _open(browser, server_url, assignment, [], java_script_enabled=False)
    page.wait_for_selector(".rv-panel.is-current")
    # No tab roles promising a widget nothing runs: a landmark of links, every panel on screen.
    assert page.get_by_role("tablist").count() == 0
    assert page.get_by_role("tab").count() == 0
    assert page.get_by_role("navigation", name="Candidates").get_by_role("link").count() == len(
        aliases
    )
    assert all(p.is_visible() for p in page.locator(".rv-panel").all())
    page.get_by_role("link", name=re.compile(rf"^Candidate {aliases[1]}\b")).first.click()
    page.wait_for_load_state()
    assert f"?c={aliases[1]}" in page.url
    current = page.locator(".rv-panel.is-current")
    assert current.get_attribute("id") == f"cand-{aliases[1]}"
    assert current.locator(".rv-file").count() > 0  # its diff came with the page
    page.screenshot(path=str(artifacts / "review-tabs-no-script-1440.png"))
    page.context.close()


# Every click that reaches the window, with whether something on the way took it over; the
# Alt and Meta clicks are then stopped here, where the browser's own action for them (a
# download, or nothing on Linux) is not what is tested.
CLICKS = """() => {
  window.__clicks = [];
  window.addEventListener('click', (ev) => {
    if (!ev.target.closest('.rv-tab')) return;
    window.__clicks.push({alias: ev.target.closest('.rv-tab').id, prevented: ev.defaultPrevented});
    if (ev.altKey || ev.metaKey) ev.preventDefault();
  });
  window.__stayed = true;  // gone once the page navigates
}"""


def test_modified_clicks_are_left_to_the_browser_and_a_plain_click_switches_in_place(
    browser: Any, server_url: str, assignment: Assignment
) -> None:
    first, second, third = _aliases(assignment)[:3]
    errors: list[str] = []
    page = _open(browser, server_url, assignment, errors)
    opened(page)
    page.evaluate(CLICKS)
    # Ctrl+click, Shift+click and a middle click open the candidate's own page: a new page of
    # the same review with that candidate shown, and this one stays where it was.
    for how in ({"modifiers": ["Control"]}, {"modifiers": ["Shift"]}, {"button": "middle"}):
        with page.context.expect_page() as opening:
            page.locator(f"#cand-{second}-tab").click(**how)
        other = opening.value
        other.wait_for_load_state()
        assert f"?c={second}" in other.url, how
        opened(other)
        assert other.evaluate(CURRENT) == second
        other.close()
        assert page.evaluate(CURRENT) == first, how
    for modifier in ("Alt", "Meta"):
        page.locator(f"#cand-{third}-tab").click(modifiers=[modifier])
    clicks = page.evaluate("() => window.__clicks")
    # The middle button fires no click (auxclick): four clicks, none taken over by the page.
    expected = [second, second, third, third]
    assert clicks == [{"alias": f"cand-{a}-tab", "prevented": False} for a in expected]
    _selected(page, first)
    # A plain click is the widget's: the candidate is shown in place, without a navigation.
    page.locator(f"#cand-{third}-tab").click()
    switched(page)
    assert page.evaluate(CURRENT) == third
    _selected(page, third)
    assert page.evaluate("() => window.__stayed") is True
    assert page.evaluate("() => window.__clicks.at(-1)") == {
        "alias": f"cand-{third}-tab",
        "prevented": True,
    }
    assert page.evaluate("() => window.location.hash") == f"#cand-{third}"
    assert len(page.context.pages) == 1
    assert errors == []
    page.context.close()


# The focused tab's focus ring (its border box grown by outline-width + outline-offset) and the
# part of the tab bar that shows its content (the bar scrolls sideways, which clips the rest).
RING = """() => {
  const bar = document.querySelector('.rv-tabs');
  const tab = document.activeElement;
  const s = getComputedStyle(tab);
  const grow = parseFloat(s.outlineWidth) + parseFloat(s.outlineOffset);
  const r = tab.getBoundingClientRect();
  const b = bar.getBoundingClientRect();
  const left = b.left + bar.clientLeft, top = b.top + bar.clientTop;
  return {
    style: s.outlineStyle, width: parseFloat(s.outlineWidth),
    ring: {left: r.left - grow, top: r.top - grow, right: r.right + grow, bottom: r.bottom + grow},
    seen: {left: left, top: top, right: left + bar.clientWidth, bottom: top + bar.clientHeight},
    scrolls: bar.scrollWidth > bar.clientWidth,
  };
}"""


def _ring_shown_whole(page: Any) -> dict[str, Any]:
    geometry = page.evaluate(RING)
    ring, seen = geometry["ring"], geometry["seen"]
    assert geometry["style"] == "solid" and geometry["width"] >= 2, geometry
    assert ring["left"] >= seen["left"] and ring["right"] <= seen["right"], geometry
    assert ring["top"] >= seen["top"] and ring["bottom"] <= seen["bottom"], geometry
    return geometry


def test_the_focused_tabs_ring_is_never_clipped_by_the_scrolling_bar(
    browser: Any, server_url: str, artifacts: Path, assignment: Assignment
) -> None:
    aliases = _aliases(assignment)
    errors: list[str] = []
    page = _open(browser, server_url, assignment, errors)
    page.set_viewport_size({"width": 700, "height": 900})
    opened(page)
    page.locator(f"#cand-{aliases[0]}-tab").focus()
    page.keyboard.press("End")  # a keyboard focus: the ring shows (:focus-visible)
    _on(page, aliases[-1])
    # At 700 px the tabs do not all fit: the last one is reached by scrolling the bar.
    assert _ring_shown_whole(page)["scrolls"]
    page.screenshot(path=str(artifacts / "review-tabs-ring-700.png"))
    # Back at the start, the first tab's ring at the bar's left edge is whole as well.
    page.keyboard.press("Home")
    _on(page, aliases[0])
    _ring_shown_whole(page)
    assert errors == []
    page.context.close()


STATUS = "() => document.querySelector('.rv-panel.is-current .rv-save-status').textContent"


def _status(page: Any, start: str) -> str:
    page.wait_for_function(f"() => ({STATUS})().startsWith({start!r})")
    return str(page.evaluate(STATUS))


def test_a_page_opened_from_a_tab_never_overwrites_what_another_page_saved(
    browser: Any, server_url: str, artifacts: Path, assignment: Assignment
) -> None:
    """A Ctrl+click opens a second page of the same review. Each page autosaves the whole label
    form of a candidate: a page that loaded before the other saved must not write its stale
    copy over the other's (a score set there would blank the tier set here)."""
    second = _aliases(assignment)[1]
    candidate = assignment.candidates.get(alias=second)
    errors: list[str] = []
    page = _open(browser, server_url, assignment, errors)
    opened(page)
    with page.context.expect_page() as opening:
        page.locator(f"#cand-{second}-tab").click(modifiers=["Control"])
    other = opening.value
    other.on("pageerror", lambda e: errors.append(str(e)))
    opened(other)
    other.keyboard.press("1")
    _status(other, "Saved")
    saved = Label.objects.get(candidate=candidate)
    # The tier fills in the rank and pre-fills the rubric (marked so until the reviewer sets it).
    assert (saved.tier, saved.rank_in_tier, saved.confidence) == ("t1", 1, None)
    assert saved.prefilled
    # The first page still holds the label as it loaded (none): a score set there is refused,
    # with what to do, and the tier the other page saved stays.
    page.locator(f"#cand-{second}-tab").click()
    switched(page)
    page.locator(".rv-panel.is-current input[name=confidence][value='4'] + span").click()
    status = _status(page, "Not saved")
    assert "another tab or window" in status and "Reload" in status, status
    label = Label.objects.get(candidate=candidate)
    assert (label.tier, label.rank_in_tier, label.confidence) == ("t1", 1, None)
    assert label.prefilled == saved.prefilled
    page.screenshot(path=str(artifacts / "review-tabs-stale-page.png"))
    # Reloaded, the page shows the saved tier and saves from there.
    page.reload()
    opened(page)
    assert page.evaluate(CURRENT) == second
    assert page.locator(".rv-panel.is-current input[name=tier][value=t1]").is_checked()
    page.locator(".rv-panel.is-current input[name=confidence][value='4'] + span").click()
    _status(page, "Saved")
    # Saves in quick succession from one page (the next asked for while one is on its way) are
    # each based on the one before: none is refused.
    page.locator(f"#cand-{second}-tab").focus()  # digits on a rubric row are its score
    for key in ("2", "3", "2"):
        page.keyboard.press(key)
    _status(page, "Saved")
    label = Label.objects.get(candidate=candidate)
    assert (label.tier, label.confidence) == ("t2", 4)
    # Now the other page is the stale one.
    other.keyboard.press("3")
    _status(other, "Not saved")
    assert Label.objects.get(candidate=candidate).tier == "t2"
    assert errors == []
    page.context.close()


# The page as a tab opened in the background has it (Ctrl+click opens one there), until shown.
HIDDEN = """(() => {
  let hidden = true;
  Object.defineProperty(document, 'hidden', {get: () => hidden});
  Object.defineProperty(document, 'visibilityState', {get: () => hidden ? 'hidden' : 'visible'});
  window.__show = () => { hidden = false; document.dispatchEvent(new Event('visibilitychange')); };
})()"""


def test_a_page_opened_in_the_background_claims_the_clock_only_once_shown(
    browser: Any, server_url: str, assignment: Assignment
) -> None:
    """The activity clock is one per review: a page loaded in a background tab that said
    "focus" moved the candidate being timed to its own while the reviewer went on reading
    the other (until that page's next heartbeat)."""
    second = _aliases(assignment)[1]
    errors: list[str] = []
    ctx = browser.new_context(viewport={"width": 1440, "height": 900})
    page = ctx.new_page()
    page.on("pageerror", lambda e: errors.append(str(e)))
    login(page, server_url, "alice")
    sent: list[dict[str, Any]] = []
    page.on(
        "request",
        lambda r: sent.extend(r.post_data_json["events"]) if r.url.endswith("/events") else None,
    )
    page.add_init_script(HIDDEN)
    page.goto(f"{server_url}/review/a/{assignment.pk}/?c={second}#cand-{second}")
    opened(page)
    page.wait_for_timeout(300)
    assert sent == []
    candidate = assignment.candidates.get(alias=second)
    with page.expect_request(lambda r: r.url.endswith("/events")):
        page.evaluate("() => window.__show()")
    assert sent == [{"kind": "focus", "candidate": candidate.token}]
    assert errors == []
    ctx.close()
