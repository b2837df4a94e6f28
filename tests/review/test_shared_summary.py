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


def test_each_hunk_is_listed_with_its_badge_and_its_path_escaped():
    shares = [
        HunkShare('x/<b>&"q.py', 1234, 1, 5),  # only this candidate
        HunkShare("r\u202eev.py", 7, 4, 5),  # most of them
        HunkShare("c.py", 9, 2, 5),  # some
    ]
    html = render_to_string("review/_candidate_side.html", {"p": _Content([], shares), "total": 5})
    assert (
        '<ul><li class="is-unique" data-path="x/&lt;b&gt;&amp;&quot;q.py" data-line="1234" '
        'data-side="old"><a href="#" data-goto>x/&lt;b&gt;&amp;&quot;q.py:1234</a> '
        '<span class="rv-badge">only this one</span></li>'
        '<li class="is-common" data-path="r\u202eev.py" data-line="7" data-side="old">'
        '<a href="#" data-goto>r\u27e8U+202E\u27e9ev.py:7</a> <span class="rv-badge">4/5</span>'
        '</li><li class="" data-path="c.py" data-line="9" data-side="old"><a href="#" '
        'data-goto>c.py:9</a> <span class="rv-badge">2/5</span></li></ul>'
    ) in html
