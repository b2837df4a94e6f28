"""The review page as the server sends it, before any script: the candidate tabs are links that
each load the page for one candidate, the tab roles are left to the script (review.js adds them,
tests/browser/test_tabs_browser.py), and the markup is well formed with unique ids."""

from __future__ import annotations

from html.parser import HTMLParser

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse

from review.models import Assignment, Campaign
from review.services.queue import assignment_next

pytestmark = pytest.mark.django_db

# HTML's void elements: no end tag to wait for.
VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source"}
VOID |= {"track", "wbr"}
# Attributes that describe a tab widget: true only once the script runs it.
TAB_ATTRS = {"role", "aria-selected", "aria-controls", "aria-labelledby", "tabindex"}


class _Page(HTMLParser):
    """Every element with its attributes and the open elements above it; nesting problems."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.elements: list[tuple[str, dict[str, str | None], tuple[str, ...]]] = []
        self.problems: list[str] = []
        self._open: list[str] = []
        self._classes: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = dict(attrs)
        self.elements.append((tag, values, tuple(self._classes)))
        if tag not in VOID:
            self._open.append(tag)
            self._classes.append(values.get("class") or "")

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.elements.append((tag, dict(attrs), tuple(self._classes)))

    def handle_endtag(self, tag: str) -> None:
        if tag in VOID:
            return
        if not self._open or self._open[-1] != tag:
            self.problems.append(f"</{tag}> closes <{self._open[-1] if self._open else ''}>")
            if tag in self._open:  # resynchronise, so one problem is reported once
                while self._open.pop() != tag:
                    self._classes.pop()
                self._classes.pop()
            return
        self._open.pop()
        self._classes.pop()

    def close(self) -> None:
        super().close()
        self.problems += [f"<{tag}> never closed" for tag in self._open]


def _page(client: Client, assignment: Assignment, query: str = "") -> _Page:
    response = client.get(reverse("review:page", args=[assignment.pk]) + query)
    assert response.status_code == 200
    page = _Page()
    page.feed(response.content.decode())
    page.close()
    return page


def _has(attrs: dict[str, str | None], name: str) -> bool:
    return name in (attrs.get("class") or "").split()


def _in(classes: tuple[str, ...], name: str) -> bool:
    return any(name in c.split() for c in classes)


@pytest.fixture
def mine(client: Client, campaign: Campaign, reviewer: User) -> Assignment:
    client.force_login(reviewer)
    assignment = assignment_next(campaign=campaign, reviewer=reviewer)
    assert assignment is not None
    return assignment


def test_it_sends_the_tabs_as_links_to_each_candidates_panel(
    client: Client, mine: Assignment
) -> None:
    aliases = [c.alias for c in mine.candidates.order_by("position")]
    assert len(aliases) > 1
    page = _page(client, mine)
    assert page.problems == []
    ids = [a["id"] for _, a, _ in page.elements if a.get("id")]
    assert len(ids) == len(set(ids))

    bars = [a for tag, a, _ in page.elements if _has(a, "rv-tabs")]
    assert bars == [{"class": "rv-tabs", "aria-label": "Candidates"}]
    tabs = [a for tag, a, up in page.elements if _in(up, "rv-tabs") and tag == "a"]
    assert [a["href"] for a in tabs] == [f"?c={x}#cand-{x}" for x in aliases]
    panels = [a for tag, a, _ in page.elements if _has(a, "rv-panel")]
    assert [a["id"] for a in panels] == [f"cand-{x}" for x in aliases]
    for attrs in tabs + panels + bars:
        assert not TAB_ATTRS & attrs.keys(), attrs


def test_it_follows_a_tab_link_to_that_candidate_without_script(
    client: Client, mine: Assignment
) -> None:
    second = mine.candidates.order_by("position")[1].alias
    page = _page(client, mine, f"?c={second}")
    assert page.problems == []
    current = [a for tag, a, _ in page.elements if tag == "section" and _has(a, "is-current")]
    assert [a["id"] for a in current] == [f"cand-{second}"]
    assert current[0].get("data-loaded") == "1"
    # Its diff came with the page: file blocks inside that section.
    in_panels = [up for _, a, up in page.elements if _has(a, "rv-file") and _in(up, "rv-panel")]
    assert in_panels and all(_in(up, "is-current") for up in in_panels)
