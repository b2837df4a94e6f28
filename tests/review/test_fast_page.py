"""A fast page for big groups (issue 17): only the active candidate's diff comes with the page,
the others' panels are fragments fetched on demand; one label form; folded context is left out
and fetched when expanded; pages are compressed (but not where secrets meet reflected input)."""

from __future__ import annotations

import gzip
import re
from pathlib import Path

import pytest
from django.conf import settings
from django.urls import reverse

from review.diffs import parse_patch, render_file
from review.diffs.html import PART_ROWS
from review.models.reviewing import CRITERIA
from review.services.queue import assignment_next

pytestmark = pytest.mark.django_db

BLOCK = re.compile(r'<tbody class="d-collapsed" id="([^"]+)" hidden></tbody>')
CONTROL = re.compile(r"<(input|select|textarea)\b([^>]*)>")


@pytest.fixture
def mine(client, campaign, reviewer):
    client.force_login(reviewer)
    return assignment_next(campaign=campaign, reviewer=reviewer)


def test_the_page_holds_the_active_candidates_diff_and_one_label_form(client, mine):
    candidates = list(mine.candidates.order_by("position"))
    assert len(candidates) > 1
    url = reverse("review:page", args=[mine.pk])
    html = client.get(url).content.decode()
    assert html.count('<form class="rv-label"') == 1
    assert html.count('data-loaded="1"') == 1
    first, second = candidates[0], candidates[1]
    opening = html.split(f'id="cand-{first.alias}" data-token="{first.token}"', 1)[1].split(">", 1)
    assert 'data-loaded="1"' in opening[0]
    assert reverse("review:label", args=[mine.pk, first.token]) in html.split("rv-label", 1)[1]
    # Each other candidate is a shell naming where its panel comes from.
    for c in candidates[1:]:
        assert reverse("review:panel", args=[mine.pk, c.token]) in html
    # ?c=<alias> brings that candidate instead (no script: tabs are such links).
    other = client.get(url, {"c": second.alias}).content.decode()
    assert other.count('data-loaded="1"') == 1
    action = other.split('<form class="rv-label" method="post" action="', 1)[1].split('"', 1)[0]
    assert action == reverse("review:label", args=[mine.pk, second.token])
    assert f'href="?c={second.alias}#cand-{second.alias}"' in html


def _focus_order(form_html: str) -> list[str]:
    """The label form's focusable controls in Tab order (a radio group is one stop)."""
    order: list[str] = []
    for tag, attrs in CONTROL.findall(form_html):
        if 'type="hidden"' in attrs:
            continue
        named = re.search(r'name="([^"]+)"', attrs)
        name = named.group(1) if named else ("same-as" if "data-same-as" in attrs else tag)
        if not order or order[-1] != name:
            order.append(name)
    return order


def test_the_label_forms_tab_order_goes_rubric_mergeability_confidence(client, mine):
    """The keyboard flow the help gives ("r", digits and Tab through the rubric rows, then
    mergeability, then confidence) needs nothing focusable between them: the "same rubric as"
    picker sat there once, so typing the mergeability went into it and submit answered 400
    ("say whether it can be merged") for every candidate."""
    html = client.get(reverse("review:page", args=[mine.pk])).content.decode()
    form = html.split('<form class="rv-label"', 1)[1].split("</form>", 1)[0]
    order = _focus_order(form)
    last = order.index(CRITERIA[-1])
    assert order[order.index(CRITERIA[0]) : last + 1] == list(CRITERIA)
    assert order[last + 1 : last + 3] == ["mergeability", "confidence"], order
    assert order.index("same-as") < order.index(CRITERIA[0])


def test_a_panel_fragment_is_that_candidates_panel_without_a_label_form(client, mine):
    c = mine.candidates.order_by("position")[1]
    response = client.get(reverse("review:panel", args=[mine.pk, c.token]), HTTP_X_FRAGMENT="1")
    assert response.status_code == 200
    body = response.content.decode()
    assert "<html" not in body and 'class="rv-label"' not in body
    assert f"Candidate {c.alias}" in body and 'class="rv-label-slot"' in body
    assert 'class="d-file"' in body and "rv-fix-form" in body
    assert reverse("review:fix", args=[mine.pk, c.token]) in body


def test_folded_context_is_left_out_and_served_on_demand(client, mine):
    c = mine.candidates.order_by("position")[0]
    html = client.get(reverse("review:page", args=[mine.pk])).content.decode()
    blocks = BLOCK.findall(html)
    assert blocks, "the sample group's base files give folded context"
    url = reverse("review:context", args=[mine.pk, c.token])
    response = client.get(url, [("b", b) for b in blocks[:3]], HTTP_X_FRAGMENT="1")
    assert response.status_code == 200
    body = response.content.decode()
    assert body.count("<tbody data-block=") == min(3, len(blocks))
    first_rows = body.split(f'<tbody data-block="{blocks[0]}">', 1)[1].split("</tbody>", 1)[0]
    assert first_rows.startswith('<tr class="d-equal" data-o=')
    assert client.get(url, {"b": "f-0000000000000000-p1-c9"}).status_code == 404
    assert client.get(url, {"b": "<script>"}).status_code == 404


def test_render_file_keeps_the_folded_rows_for_other_pages():
    diff = "--- a/x.py\n+++ b/x.py\n@@ -10,1 +10,1 @@\n-a = 1\n+a = 2\n"
    old = "".join(f"line_{i} = {i}\n" for i in range(1, 30)).replace("line_10 = 10", "a = 1")
    rendered = render_file(parse_patch(diff)[0], old_text=old)
    assert 'class="d-collapsed"' in rendered.html and '">line_2 ' in rendered.html
    assert '">line_2 ' not in rendered.lean_html
    assert BLOCK.search(rendered.lean_html)


PART = re.compile(r'<div class="d-part" data-rows="(\d+)">(.*?)</div>', re.S)


def test_the_review_pages_tables_come_in_parts_of_a_few_dozen_rows():
    # A long file of scattered one-line changes: many small bodies, with folded context.
    old = [f"line_{i} = {i}\n" for i in range(1, 2001)]
    new = list(old)
    for i in range(5, 2000, 20):
        new[i] = f"line_{i + 1} = -{i}\n"
    diff = "--- a/x.py\n+++ b/x.py\n" + "".join(
        f"@@ -{i - 2},7 +{i - 2},7 @@\n"
        + "".join(f" {old[j]}" for j in range(i - 3, i))
        + f"-{old[i]}+{new[i]}"
        + "".join(f" {old[j]}" for j in range(i + 1, i + 4))
        for i in range(5, 2000, 20)
    )
    rendered = render_file(parse_patch(diff)[0], old_text="".join(old))
    lean = rendered.lean_html
    parts = PART.findall(lean)
    assert len(parts) > 5
    # Every part is a table with the file's columns; only the first has the id and title.
    for n, (rows, body) in enumerate(parts):
        assert body.startswith("<table") and body.endswith("</table>")
        assert body.count("<colgroup>") == 1
        assert (f'id="{rendered.file_id}"' in body) == (n == 0)
        assert ("d-title" in body) == (n == 0)
        assert int(rows) == body.count("<tr") - (n == 0)  # the body rows: not the title's
        # About PART_ROWS rows: a part is cut once it holds that many, between bodies.
        if n < len(parts) - 1:
            assert PART_ROWS <= int(rows) < PART_ROWS + 8
    # The same rows as the table in one piece, in order; a folded body stays with its
    # expander (the page's script looks for it in the expander's table).
    rows_of = re.compile(r"<tr[^>]*>")
    folded_out = re.sub(
        r'(<tbody class="d-collapsed"[^>]*>).*?(</tbody>)', r"\1\2", rendered.html, flags=re.S
    )
    assert rows_of.findall(lean) == rows_of.findall(folded_out)
    assert len(rows_of.findall(lean)) > 10 * PART_ROWS
    for _, body in parts:
        for block in BLOCK.findall(body):
            assert f'data-expand="{block}"' in body


def test_pages_are_compressed_but_not_posts_or_reflected_queries(client, mine):
    url = reverse("review:page", args=[mine.pk])
    response = client.get(url, HTTP_ACCEPT_ENCODING="gzip")
    assert response["Content-Encoding"] == "gzip"
    assert b"rv-panel" in gzip.decompress(response.content)
    c = mine.candidates.order_by("position")[0]
    label = client.post(
        reverse("review:label", args=[mine.pk, c.token]),
        {"tier": "t1", "notes": "x" * 500},
        HTTP_ACCEPT="application/json",
        HTTP_ACCEPT_ENCODING="gzip",
    )
    assert label.status_code == 200 and not label.has_header("Content-Encoding")
    # A query string the view does not vouch for (echoed text, such as a search) stays plain.
    login = client.get(
        reverse("login"), {"next": "/review/" + "x" * 300}, HTTP_ACCEPT_ENCODING="gzip"
    )
    assert not login.has_header("Content-Encoding")


IMPORT = re.compile(r'^import\b[^"]*"(\./[^"]+)";', re.M)
PRELOAD = re.compile(r'<link rel="modulepreload" href="([^"]+)">')


def _import_graph(entry: Path) -> set[str]:
    """Every module `entry` imports, directly or not, as paths under static/."""
    static = entry.parents[1]
    seen: set[str] = set()
    todo = [entry]
    while todo:
        module = todo.pop()
        for name in IMPORT.findall(module.read_text()):
            target = (module.parent / name).resolve()
            key = target.relative_to(static).as_posix()
            if key not in seen:
                seen.add(key)
                todo.append(target)
    return seen


def test_the_page_preloads_every_module_its_script_imports(client, mine):
    # The browser finds a module's imports only once it has compiled that module, which waits
    # for the main thread while the diff is parsed: each module is named in the head instead.
    html = client.get(reverse("review:page", args=[mine.pk])).content.decode()
    head = html.split("</head>", 1)[0]
    assert '<script type="module" src="/static/review/review.js">' in head
    preloaded = {href.removeprefix("/static/") for href in PRELOAD.findall(head)}
    entry = Path(settings.BASE_DIR) / "static" / "review" / "review.js"
    graph = _import_graph(entry)
    assert len(graph) > 5
    assert preloaded == graph


def test_the_page_marks_the_candidate_it_brings_as_current(client, mine):
    # Shown as the page arrives, before any script: the style hides every other panel when
    # script runs (`@media (scripting: enabled)`), not through a class the script sets.
    first, *others = list(mine.candidates.order_by("position"))
    html = client.get(reverse("review:page", args=[mine.pk])).content.decode()
    assert f'<section class="rv-panel is-current" id="cand-{first.alias}"' in html
    assert html.count('class="rv-panel is-current"') == 1
    assert html.count('class="rv-tab is-current"') == 1
    assert f'class="rv-tab is-current" href="?c={first.alias}#' in html
    for c in others:
        assert f'<section class="rv-panel" id="cand-{c.alias}"' in html
    css = (Path(settings.BASE_DIR) / "static" / "review" / "review.css").read_text()
    assert "@media (scripting: enabled) { .rv-panel:not(.is-current) { display: none; } }" in css
    assert not re.search(r"^\.js ", css, re.M)
