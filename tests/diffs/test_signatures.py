"""Hunk fingerprints and the share of candidates that made each change."""

from __future__ import annotations

from review.diffs import hunk_signatures, shared_changes


def _patch(offset: int, body: str, path: str = "pkg/mod.py") -> str:
    return (
        f"--- a/{path}\n+++ b/{path}\n@@ -{offset},3 +{offset},3 @@\n def f(x):\n{body} return x\n"
    )


FIX = "-    if x == None:\n+    if x is None:\n"


def test_it_gives_identical_hunks_at_different_offsets_equal_signatures() -> None:
    (a,) = hunk_signatures(_patch(10, FIX))
    (b,) = hunk_signatures(_patch(250, FIX.replace("    ", "\t")))
    assert a.signature == b.signature
    assert (a.old_start, b.old_start) == (10, 250)
    assert a.path == "pkg/mod.py"


def test_it_distinguishes_different_changes() -> None:
    (a,) = hunk_signatures(_patch(10, FIX))
    (b,) = hunk_signatures(_patch(10, "-    if x == None:\n+    if not x:\n"))
    assert a.signature != b.signature


def test_it_counts_the_share_of_candidates_with_the_same_change() -> None:
    other = "-    if x == None:\n+    if not x:\n"
    shares = shared_changes(
        {
            "A": _patch(10, FIX),
            "B": _patch(12, FIX),
            "C": _patch(10, other) + _patch(40, FIX, path="pkg/other.py"),
        }
    )
    assert shares["A"] == [(0, 2 / 3)]
    assert shares["B"] == [(0, 2 / 3)]
    # The same edit in another file is another change.
    assert shares["C"] == [(0, 1 / 3), (1, 1 / 3)]


def test_it_handles_no_patches() -> None:
    assert shared_changes({}) == {}
    assert shared_changes({"A": ""}) == {"A": []}
