"""Behaviour of the side-by-side renderer on small hand-made diffs."""

from __future__ import annotations

import difflib
import re
from pathlib import Path

import pytest

from review.diffs import RenderOptions, parse_patch, render_file, render_patch
from review.diffs.highlight import INTRA_CLASS, STYLED_CLASSES, intraline_ranges
from tests.diffs._html import Element, cell_text, code_cells, parse


def _udiff(old: list[str], new: list[str], path: str = "mod.py", n: int = 3) -> str:
    lines = difflib.unified_diff(
        [f"{x}\n" for x in old], [f"{x}\n" for x in new], f"a/{path}", f"b/{path}", n=n
    )
    return f"diff --git a/{path} b/{path}\n" + "".join(lines)


def _lines(n: int) -> list[str]:
    return [f"value_{i} = compute({i})" for i in range(1, n + 1)]


def _by_class(html: str, tag: str, cls: str) -> list[Element]:
    return [el for el in parse(html).elements if el.tag == tag and cls in el.classes]


def test_it_marks_the_changed_word_within_a_paired_line() -> None:
    assert intraline_ranges("    return foo(bar)", "    return foo(baz)") == (
        [(15, 18)],
        [(15, 18)],
    )
    diff = _udiff(["x = 1", "    return foo(bar)"], ["x = 1", "    return foo(baz)"])
    (rendered,) = render_patch(diff)
    marked = _by_class(rendered.html, "span", INTRA_CLASS)
    assert [cell_text(el) for el in marked] == ["bar", "baz"]
    # The mark is a span of its own around the changed name (names are plain text), never
    # around markup.
    assert all(el.classes == {INTRA_CLASS} for el in marked)
    # On a coloured token it is that token's span, with the token's class.
    diff = _udiff(['x = "bar"'], ['x = "baz"'])
    (rendered,) = render_patch(diff)
    marked = _by_class(rendered.html, "span", INTRA_CLASS)
    assert marked and all("s2" in el.classes for el in marked)


def test_it_leaves_unrelated_replacements_unmarked() -> None:
    assert intraline_ranges("import os", "class Foo(Bar): pass") == ([], [])


def test_it_pairs_replace_blocks_in_order_and_leaves_the_rest_blank() -> None:
    diff = _udiff(["keep", "a = 1", "b = 2", "keep2"], ["keep", "a = 10", "keep2"])
    (rendered,) = render_patch(diff)
    rows = _by_class(rendered.html, "tr", "d-replace") + _by_class(rendered.html, "tr", "d-delete")
    assert len(rows) == 2
    assert len(code_cells(rendered.html, "new", "empty")) == 0  # blanks carry no data-side
    assert "d-code empty" in rendered.html


def test_it_collapses_long_unchanged_runs_when_the_old_file_is_known() -> None:
    old = _lines(40)
    new = list(old)
    new[4] = "value_5 = compute(500)"
    new[34] = "value_35 = compute(3500)"
    diff = _udiff(old, new)
    old_text = "\n".join(old) + "\n"

    (rendered,) = render_patch(diff, old_files={"mod.py": old_text})
    collapsed = _by_class(rendered.html, "tbody", "d-collapsed")
    # Lines 1-4 and 36-40 are short runs; lines 6-34 keep 3 lines each side and fold 23.
    assert all("hidden" in el.attrs for el in collapsed)
    buttons = _by_class(rendered.html, "button", "d-expand")
    assert [cell_text(b) for b in buttons] == ["Show 23 unchanged lines"]
    assert all(b.attrs["data-expand"] for b in buttons)
    # Every line of both files is present (hidden or not), so expanding needs no request.
    assert len(code_cells(rendered.html, "old", "d-code")) == 40
    assert "not in the diff" not in rendered.html


def test_it_shows_gaps_between_hunks_without_the_old_file() -> None:
    old = _lines(40)
    new = list(old)
    new[19] = "value_20 = compute(2000)"
    new[34] = "value_35 = compute(3500)"
    (rendered,) = render_patch(_udiff(old, new))
    gaps = [cell_text(el) for el in _by_class(rendered.html, "tbody", "d-gap")]
    assert [g.split(" not")[0] for g in gaps] == ["\u22ef 16 lines", "\u22ef 8 lines"]


def test_it_collapses_long_context_inside_one_hunk() -> None:
    old = _lines(30)
    new = list(old)
    new[2] = "changed_a = 1"
    new[27] = "changed_b = 2"
    (rendered,) = render_patch(_udiff(old, new, n=30))
    buttons = _by_class(rendered.html, "button", "d-expand")
    assert [cell_text(b) for b in buttons] == ["Show 18 unchanged lines"]


def test_it_ignores_an_old_file_that_does_not_match_the_diff() -> None:
    old = _lines(10)
    new = [*old[:5], "x = 1", *old[6:]]
    (rendered,) = render_patch(_udiff(old, new), old_files={"mod.py": "other\ncontent\n"})
    assert rendered.added == 1 and len(code_cells(rendered.html, "new", "ins")) == 1


def test_it_handles_crlf_diffs() -> None:
    diff = _udiff(["a = 1", "b = 2"], ["a = 1", "b = 3"]).replace("\n", "\r\n")
    (rendered,) = render_patch(diff)
    assert (rendered.path, rendered.added, rendered.removed) == ("mod.py", 1, 1)
    assert "\r" not in rendered.html
    assert [cell_text(c) for c in code_cells(rendered.html, "new", "ins")] == ["b = 3"]


def test_it_shows_nul_and_control_characters_visibly() -> None:
    diff = _udiff(["a = 1"], ["a = '\x00\x1b'"])
    (rendered,) = render_patch(diff.encode())
    assert "\x00" not in rendered.html and "\x1b" not in rendered.html
    assert "\u2400\u241b" in cell_text(code_cells(rendered.html, "new", "ins")[0])


def test_it_decodes_non_utf8_bytes_with_replacement() -> None:
    diff = _udiff(["name = 'x'"], ["name = 'CAFE'"]).encode().replace(b"CAFE", b"caf\xe9")
    (rendered,) = render_patch(diff)
    assert "caf\ufffd" in cell_text(code_cells(rendered.html, "new", "ins")[0])


def test_it_reports_binary_files_without_rows() -> None:
    diff = (
        "diff --git a/logo.png b/logo.png\nnew file mode 100644\nindex 0000000..e69de29\n"
        "Binary files /dev/null and b/logo.png differ\n"
    )
    (rendered,) = render_patch(diff)
    assert rendered.change == "binary" and rendered.path == "logo.png"
    assert "Binary file not shown." in rendered.html
    assert not code_cells(rendered.html, "new", "d-code")


def test_it_reports_renames_with_and_without_changes() -> None:
    diff = (
        "diff --git a/old name.py b/new name.py\nsimilarity index 100%\n"
        "rename from old name.py\nrename to new name.py\n"
        "diff --git a/a.py b/b.py\nsimilarity index 90%\nrename from a.py\nrename to b.py\n"
        "--- a/a.py\n+++ b/b.py\n@@ -1,2 +1,2 @@\n x = 1\n-y = 2\n+y = 3\n"
    )
    pure, edited = render_patch(diff)
    assert (pure.change, pure.old_path, pure.new_path) == ("renamed", "old name.py", "new name.py")
    assert "File renamed without changes." in pure.html
    assert (edited.change, edited.path, edited.added, edited.removed) == ("renamed", "b.py", 1, 1)
    assert "a.py \u2192 b.py" in edited.html


def test_it_handles_added_and_deleted_files() -> None:
    diff = (
        "diff --git a/new.py b/new.py\nnew file mode 100644\n--- /dev/null\n+++ b/new.py\n"
        "@@ -0,0 +1,2 @@\n+a = 1\n+b = 2\n"
        "diff --git a/gone.py b/gone.py\ndeleted file mode 100644\n--- a/gone.py\n+++ /dev/null\n"
        "@@ -1 +0,0 @@\n-a = 1\n"
    )
    added, deleted = render_patch(diff)
    assert (added.change, added.old_path, added.added) == ("added", None, 2)
    assert (deleted.change, deleted.new_path, deleted.removed) == ("deleted", None, 1)
    assert deleted.path == "gone.py"


def test_it_marks_a_missing_newline_at_end_of_file() -> None:
    diff = (
        "--- a/t.txt\n+++ b/t.txt\n@@ -1,2 +1,2 @@\n one\n-two\n\\ No newline at end of file\n"
        "+two\n"
    )
    (rendered,) = render_patch(diff)
    (old_cell,) = code_cells(rendered.html, "old", "del")
    (new_cell,) = code_cells(rendered.html, "new", "ins")
    assert "No newline" in str(_by_class(rendered.html, "span", "d-nonl")[0].attrs)
    assert "\u2424" in cell_text(old_cell) and "\u2424" not in cell_text(new_cell)
    assert (rendered.added, rendered.removed) == (1, 1)


def test_it_paginates_large_files() -> None:
    new = [f"row_{i} = {i}" for i in range(5_000)]
    diff = "--- /dev/null\n+++ b/big.py\n@@ -0,0 +1,5000 @@\n" + "".join(f"+{x}\n" for x in new)
    file = parse_patch(diff)[0]
    opts = RenderOptions(page_size=2_000)
    pages = [render_file(file, options=opts, page=p) for p in (1, 2, 3)]
    assert [p.pages for p in pages] == [3, 3, 3]
    shown = [len(code_cells(p.html, "new", "ins")) for p in pages]
    assert shown == [2_000, 2_000, 1_000]
    assert 'data-n="4001"' in pages[2].html
    with pytest.raises(ValueError):
        render_file(file, options=opts, page=4)


def test_it_switches_highlighting_off_above_the_thresholds() -> None:
    small = _udiff(["x = 1"], ["x = 2"])
    assert render_patch(small)[0].highlighted
    assert '<span class="mi' in render_patch(small)[0].html
    (plain,) = render_patch(small, options=RenderOptions(highlight_max_lines=0))
    assert not plain.highlighted and '<span class="mi' not in plain.html
    long_line = _udiff(["x = 1"], ["x = '" + "a" * 5_000 + "'"])
    assert not render_patch(long_line)[0].highlighted


def test_it_highlights_each_side_as_a_whole() -> None:
    # The closing quotes are only a string because the opening line was lexed with them.
    diff = _udiff(['s = """', "inside", '"""', "a = 1"], ['s = """', "inside", '"""', "a = 2"])
    (rendered,) = render_patch(diff)
    inside = [el for el in code_cells(rendered.html, "old", "eq") if cell_text(el) == "inside"]
    assert 'class="s2">inside' in rendered.html and inside


def test_it_anchors_every_line_and_hashes_the_file_id() -> None:
    (rendered,) = render_patch(_udiff(["a = 1"], ["a = 2"], path="pkg/x y.py"))
    table = parse(rendered.html).elements[0]
    assert table.attrs["data-file"] == "pkg/x y.py"
    assert table.attrs["id"] == rendered.file_id and rendered.file_id.startswith("f-")
    assert " " not in rendered.file_id
    for el in code_cells(rendered.html, "old", "d-code") + code_cells(
        rendered.html, "new", "d-code"
    ):
        assert el.attrs["data-line"] and el.attrs["data-line"].isdigit()


def test_it_ignores_an_old_file_when_hunks_point_past_its_end() -> None:
    diff = "--- a/m.py\n+++ b/m.py\n@@ -900000,0 +900001,1 @@\n+x = 1\n"
    (rendered,) = render_patch(diff, old_files={"m.py": "a = 1\n"})
    assert rendered.added == 1 and "d-gap" in rendered.html


def test_tokens_the_style_does_not_colour_are_plain_text() -> None:
    # Names and punctuation (half of all tokens) have no colour in the page's style: as spans
    # they were elements the browser parsed, styled and laid out for nothing.
    diff = _udiff(["x = 1"], ["result = compute(x, y)  # two"])
    (rendered,) = render_patch(diff)
    new = [cell_text(c) for c in code_cells(rendered.html, "new", "ins")]
    assert new == ["result = compute(x, y)  # two"]
    html = rendered.html
    assert '<td class="d-code ins">result <span class="o">=</span> compute(x, y)  ' in html
    assert '<span class="c1"># two</span>' in html
    assert '<span class="n">' not in html and '<span class="p">' not in html


def test_the_pages_style_colours_exactly_the_classes_the_highlighter_keeps() -> None:
    css = (Path(__file__).resolve().parents[2] / "static/review/review.css").read_text()
    rules = set(re.findall(r"^\.d-code \.([a-z0-9]+) \{", css, re.M))
    assert rules == STYLED_CLASSES
