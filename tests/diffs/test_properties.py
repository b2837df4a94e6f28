"""Invariants over generated diffs (hypothesis)."""

from __future__ import annotations

import difflib

from hypothesis import given, settings
from hypothesis import strategies as st

from review.diffs import parse_patch, render_patch
from tests.diffs._html import cell_text, code_cells

LINE = st.sampled_from(["a = 1", "b = 2", "", "    return x", "# <c>", "s = '\"'", "\tx\x00"])
FILE = st.lists(LINE, max_size=30)


def _udiff(old: list[str], new: list[str], n: int) -> str:
    body = difflib.unified_diff(
        [f"{x}\n" for x in old], [f"{x}\n" for x in new], "a/m.py", "b/m.py", n=n
    )
    return "".join(body)


@settings(max_examples=150, deadline=None)
@given(FILE, FILE, st.integers(min_value=0, max_value=4), st.integers(min_value=0, max_value=4))
def test_it_shows_every_changed_line_once(
    old: list[str], new: list[str], n: int, context: int
) -> None:
    diff = _udiff(old, new, n)
    rendered = render_patch(diff, context=context)
    expected = sum(1 for ln in diff.splitlines() if ln.startswith("+") and ln[:3] != "+++")
    assert sum(r.added for r in rendered) == expected
    for r in rendered:
        assert len(code_cells(r.html, "new", "ins")) == r.added
        assert len(code_cells(r.html, "old", "del")) == r.removed


@settings(max_examples=100, deadline=None)
@given(FILE, FILE, st.integers(min_value=0, max_value=4))
def test_it_shows_both_whole_files_when_the_old_file_is_known(
    old: list[str], new: list[str], n: int
) -> None:
    diff = _udiff(old, new, n)
    old_text = "".join(f"{x}\n" for x in old)
    for r in render_patch(diff, old_files={"m.py": old_text}):
        olds = [cell_text(c) for c in code_cells(r.html, "old", "d-code")]
        news = [cell_text(c) for c in code_cells(r.html, "new", "d-code")]
        assert olds == [x.replace("\x00", "\u2400") for x in old]
        assert news == [x.replace("\x00", "\u2400") for x in new]


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=400))
def test_it_never_raises_on_garbage(data: bytes) -> None:
    prefix = b"diff --git a/x.py b/x.py\n--- a/x.py\n+++ b/x.py\n@@ -1,3 +1,4 @@\n"
    for blob in (data, prefix + data):
        parse_patch(blob)
        render_patch(blob)
