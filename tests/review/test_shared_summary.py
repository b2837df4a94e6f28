"""The shared-changes summary adds up to the badges beside it (issue 17: "0 common, 0 unique"
next to a hunk badged "2/8")."""

from django.template.loader import render_to_string

from review.blinded_cache import HunkShare
from review.presenters import _Content


def test_a_hunk_some_candidates_share_is_counted():
    shares = [HunkShare("a.py", 3, 2, 8), HunkShare("a.py", 20, 7, 8), HunkShare("b.py", 1, 1, 8)]
    html = render_to_string("review/_candidate_side.html", {"p": _Content([], shares), "total": 8})
    assert "Shared changes: 3 hunks · 1 by most · 1 by some · 1 only here" in html
    assert ">2/8<" in html
