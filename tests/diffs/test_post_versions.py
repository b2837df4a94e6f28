"""Two candidates' post-patch versions side by side (`grading.diffs.post_versions`): from the
base file where there is one, else rebuilt from the hunks; rendered as one diff between them."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from grading.diffs import compare_patches, parse_patch, post_versions
from review.diffs import HUNKS_ONLY, render_post_pair

BASE = "".join(f"line {n}\n" for n in range(1, 31))


def _diff(path: str, *hunks: str) -> str:
    return f"diff --git a/{path} b/{path}\n--- a/{path}\n+++ b/{path}\n" + "".join(hunks)


def _pair(a: str, b: str, base: dict[str, str] | None = None):  # type: ignore[no-untyped-def]
    (fc,) = [f for f in compare_patches(parse_patch(a), parse_patch(b)) if f.path == "s.py"]
    pair = post_versions(fc, base)
    assert pair is not None
    return pair


# A changes line 5, B changes line 5 differently and line 20; both keep the rest.
A = _diff("s.py", "@@ -4,3 +4,3 @@\n line 4\n-line 5\n+line five (A)\n line 6\n")
B = _diff(
    "s.py",
    "@@ -4,3 +4,3 @@\n line 4\n-line 5\n+line five (B)\n line 6\n",
    "@@ -19,3 +19,4 @@\n line 19\n line 20\n+added by B\n line 21\n",
)


def _text(lines) -> list[str]:  # type: ignore[no-untyped-def]
    return [ln.content for ln in lines]


def test_with_the_base_each_side_is_the_whole_post_patch_file() -> None:
    pair = _pair(A, B, {"s.py": BASE})
    assert pair.complete and len(pair.segments) == 1
    (seg,) = pair.segments
    assert len(seg.a) == 30 and len(seg.b) == 31
    assert seg.a[4].content == "line five (A)" and seg.a[4].changed
    assert seg.b[20].content == "added by B" and seg.b[20].no == 21
    assert [ln.no for ln in seg.a] == list(range(1, 31))
    ops = [op for op in seg.opcodes() if op[0] != "equal"]
    assert ops == [("replace", 4, 5, 4, 5), ("insert", 20, 20, 20, 21)]


def test_without_the_base_the_hunks_are_the_known_stretches() -> None:
    pair = _pair(A, B)
    assert not pair.complete
    assert [(s.base_start, s.base_end) for s in pair.segments] == [(4, 6), (19, 21)]
    first, second = pair.segments
    assert _text(first.a) == ["line 4", "line five (A)", "line 6"]
    assert _text(first.b) == ["line 4", "line five (B)", "line 6"]
    # A does not touch lines 19-21: its version of them is the base, read from B's hunk, with
    # A's own post-patch numbers (A adds nothing before them, so they keep their numbers).
    assert _text(second.a) == ["line 19", "line 20", "line 21"]
    assert [ln.no for ln in second.a] == [19, 20, 21]
    assert _text(second.b) == ["line 19", "line 20", "added by B", "line 21"]
    assert [ln.no for ln in second.b] == [19, 20, 21, 22]
    assert pair.unknown_before(0) == 3 and pair.unknown_before(1) == 12


def test_rebuilt_line_numbers_follow_each_candidates_earlier_changes() -> None:
    # A inserts two lines near the top; B changes line 25. A's version of 24-26 is shifted.
    a = _diff("s.py", "@@ -2,0 +3,2 @@\n+new 1\n+new 2\n")
    b = _diff("s.py", "@@ -24,3 +24,3 @@\n line 24\n-line 25\n+line 25 (B)\n line 26\n")
    pair = _pair(a, b)
    last = pair.segments[-1]
    assert [(ln.no, ln.content) for ln in last.a] == [
        (26, "line 24"),
        (27, "line 25"),
        (28, "line 26"),
    ]
    assert [ln.no for ln in last.b] == [24, 25, 26]
    # The same pair with the base gives the same lines and numbers at those places.
    full = _pair(a, b, {"s.py": BASE}).segments[0]
    assert [(ln.no, ln.content) for ln in full.a[25:28]] == [(n.no, n.content) for n in last.a]


def test_overlapping_hunks_merge_into_one_stretch() -> None:
    a = _diff("s.py", "@@ -10,3 +10,3 @@\n line 10\n-line 11\n+A11\n line 12\n")
    b = _diff("s.py", "@@ -12,3 +12,2 @@\n line 12\n-line 13\n line 14\n")
    pair = _pair(a, b)
    (seg,) = pair.segments
    assert (seg.base_start, seg.base_end) == (10, 14)
    assert _text(seg.a) == ["line 10", "A11", "line 12", "line 13", "line 14"]
    assert _text(seg.b) == ["line 10", "line 11", "line 12", "line 14"]


def test_new_files_are_complete_without_a_base() -> None:
    new = "diff --git a/s.py b/s.py\nnew file mode 100644\n--- /dev/null\n+++ b/s.py\n"
    a = new + "@@ -0,0 +1,2 @@\n+x = 1\n+y = 2\n"
    b = new + "@@ -0,0 +1,2 @@\n+x = 1\n+y = 3\n"
    pair = _pair(a, b)
    assert pair.complete
    assert [op[0] for op in pair.segments[0].opcodes()] == ["equal", "replace"]


def test_a_base_that_does_not_fit_the_hunks_falls_back_to_the_hunks() -> None:
    pair = _pair(A, B, {"s.py": BASE.replace("line 5\n", "other\n")})
    assert not pair.complete


def test_binary_files_have_no_versions() -> None:
    a = "diff --git a/s.py b/s.py\nindex 1..2 100644\nBinary files a/s.py and b/s.py differ\n"
    (fc,) = compare_patches(parse_patch(a), parse_patch(a))
    assert post_versions(fc) is None


def test_the_rendering_is_highlighted_with_intra_line_marks() -> None:
    out = render_post_pair(_pair(A, B, {"s.py": BASE}))
    assert out.complete and out.highlighted and not out.identical
    assert out.differing == 2
    assert 'class="d-replace"' in out.html and 'class="d-insert"' in out.html
    assert "d-chg" in out.html  # "(A)" against "(B)" inside the paired line
    assert HUNKS_ONLY not in out.html
    assert "Show 9 unchanged lines" in out.html  # long equal runs fold, as in the review


def test_a_rebuilt_rendering_says_so_and_shows_the_gaps() -> None:
    out = render_post_pair(_pair(A, B))
    assert not out.complete
    assert HUNKS_ONLY in out.html
    assert "12 lines not in the diff" in out.html


lines = st.lists(st.sampled_from(["a", "b", "c", "d"]), min_size=1, max_size=12)


@settings(max_examples=60, deadline=None)
@given(base=lines, edits_a=st.data())
def test_rebuilt_stretches_agree_with_the_whole_files(base, edits_a) -> None:  # type: ignore[no-untyped-def]
    """Property: every line of a rebuilt stretch is the line with that number in the whole
    post-patch file (computed from the base), for random edits by both candidates."""
    import difflib

    text = "".join(x + "\n" for x in base)

    def patch_of(new: list[str]) -> str:
        body = "".join(
            difflib.unified_diff(
                [x + "\n" for x in base], [x + "\n" for x in new], "a/s.py", "b/s.py", n=1
            )
        )
        return f"diff --git a/s.py b/s.py\n{body}" if body else ""

    new_a = edits_a.draw(lines)
    new_b = edits_a.draw(lines)
    pa, pb = patch_of(new_a), patch_of(new_b)
    if not pa and not pb:
        return
    comparisons = [f for f in compare_patches(parse_patch(pa), parse_patch(pb)) if f.path == "s.py"]
    (fc,) = comparisons
    full = post_versions(fc, {"s.py": text})
    part = post_versions(fc)
    assert full is not None and part is not None and full.complete
    whole_a = {ln.no: ln.content for ln in full.segments[0].a}
    whole_b = {ln.no: ln.content for ln in full.segments[0].b}
    assert [ln.content for ln in full.segments[0].a] == new_a
    assert [ln.content for ln in full.segments[0].b] == new_b
    for seg in part.segments:
        assert all(whole_a[ln.no] == ln.content for ln in seg.a)
        assert all(whole_b[ln.no] == ln.content for ln in seg.b)
