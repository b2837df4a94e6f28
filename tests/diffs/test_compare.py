"""The one candidate compare (`grading.diffs.compare`): what A's post-patch files do that B's
do not."""

from __future__ import annotations

from grading.diffs import FileComparison, compare_patches, parse_patch


def _diff(path: str, *hunks: str) -> str:
    return f"diff --git a/{path} b/{path}\n--- a/{path}\n+++ b/{path}\n" + "".join(hunks)


def _cmp(a: str, b: str) -> list[FileComparison]:
    return compare_patches(parse_patch(a), parse_patch(b))


def _lines(blocks: tuple) -> list[tuple[str, str, int]]:  # type: ignore[type-arg]
    return [(ln.kind, ln.content, ln.base_line) for b in blocks for ln in b.lines]


FIX = "@@ -9,3 +9,3 @@ def size(n):\n     x = 1\n-    return n > 1\n+    return n >= 1\n     y\n"


def test_the_same_change_with_other_context_and_offsets_is_identical() -> None:
    """The old `compare_diffs` compared per-file diff text, so five lines of context instead of
    three, or another section header, made an identical change look different."""
    wide = "@@ -8,5 +8,5 @@\n w\n     x = 1\n-    return n > 1\n+    return n >= 1\n     y\n z\n"
    (fc,) = _cmp(_diff("s.py", FIX), _diff("s.py", wide))
    assert fc.identical and fc.count("shared") == 2
    assert fc.only_a == () and fc.only_b == ()


def test_unique_and_shared_lines_are_placed_on_the_base() -> None:
    # A fixes the comparison and adds a guard; B fixes it the same way and adds a log line.
    a = _diff(
        "s.py",
        "@@ -2,0 +3 @@\n+import math\n",
        "@@ -10 +11,2 @@\n-    return n > 1\n+    if n < 0: raise ValueError\n+    return n >= 1\n",
    )
    b = _diff("s.py", "@@ -10 +10,2 @@\n-    return n > 1\n+    return n >= 1\n+    log(n)\n")
    (fc,) = _cmp(a, b)
    assert not fc.identical
    assert _lines(fc.shared) == [("-", "    return n > 1", 10), ("+", "    return n >= 1", 11)]
    assert _lines(fc.only_a) == [
        ("+", "import math", 3),
        ("+", "    if n < 0: raise ValueError", 11),
    ]
    assert _lines(fc.only_b) == [("+", "    log(n)", 11)]
    # Blocks give each candidate's own post-patch line numbers, for evidence.
    assert [b.post_lines for b in fc.only_a] == [(3, 3), (11, 11)]
    assert fc.only_b[0].post_lines == (11, 11)


def test_the_same_text_inserted_at_another_place_is_not_shared() -> None:
    a = _diff("s.py", "@@ -3,0 +4 @@\n+import os\n")
    b = _diff("s.py", "@@ -5,0 +6 @@\n+import os\n")
    (fc,) = _cmp(a, b)
    assert _lines(fc.only_a) == [("+", "import os", 4)]
    assert _lines(fc.only_b) == [("+", "import os", 6)]


def test_a_line_added_twice_by_one_side_and_once_by_the_other() -> None:
    a = _diff("s.py", "@@ -3,0 +4,2 @@\n+pass\n+pass\n")
    b = _diff("s.py", "@@ -3,0 +4 @@\n+pass\n")
    (fc,) = _cmp(a, b)
    assert fc.count("shared") == 1 and fc.count("only_a") == 1 and fc.count("only_b") == 0


def test_files_only_one_side_touches_keep_the_page_order() -> None:
    a = _diff("b.py", FIX) + _diff("a.py", FIX)
    b = _diff("c.py", FIX) + _diff("a.py", FIX)
    rows = _cmp(a, b)
    assert [(r.path, r.a is not None, r.b is not None) for r in rows] == [
        ("b.py", True, False),
        ("a.py", True, True),
        ("c.py", False, True),
    ]
    assert rows[0].count("only_a") == 2 and not rows[0].identical
    assert rows[1].identical and rows[2].count("only_b") == 2


def test_binary_files_compare_by_their_diff_text() -> None:
    png = (
        "diff --git a/i.png b/i.png\nindex {}..2 100644\nBinary files a/i.png and b/i.png differ\n"
    )
    same = _cmp(png.format("1"), png.format("1"))[0]
    assert same.identical
    other = "diff --git a/i.png b/i.png\nGIT binary patch\nliteral 4\nabcd\n"
    assert not _cmp(png.format("1"), other)[0].identical


def test_crlf_and_lf_versions_of_a_change_are_the_same_change() -> None:
    (fc,) = _cmp(_diff("s.py", FIX), _diff("s.py", FIX.replace("\n", "\r\n")))
    assert fc.identical


def test_a_deletion_against_an_edit() -> None:
    a = "diff --git a/s.py b/s.py\ndeleted file mode 100644\n--- a/s.py\n+++ /dev/null\n"
    a += "@@ -1,2 +0,0 @@\n-x\n-y\n"
    b = _diff("s.py", "@@ -2 +2 @@\n-y\n+Y\n")
    (fc,) = _cmp(a, b)
    assert _lines(fc.shared) == [("-", "y", 2)]
    assert _lines(fc.only_a) == [("-", "x", 1)]
    assert _lines(fc.only_b) == [("+", "Y", 3)]


def test_the_summary_counts_one_shared_line_in_the_singular() -> None:
    from review.diffs import changed_lines_summary

    a = _diff("s.py", "@@ -2,0 +3 @@\n+import math\n", "@@ -9,0 +11 @@\n+    log(n)\n")
    b = _diff("s.py", "@@ -9,0 +10 @@\n+    log(n)\n")
    (fc,) = _cmp(a, b)
    assert fc.count("shared") == 1, fc
    assert changed_lines_summary(fc) == (
        "1 changed line shared, 1 only on the left, 0 only on the right."
    )
