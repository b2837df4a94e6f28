"""Hostile file names and code come out as text, never as markup."""

from __future__ import annotations

from grading.diffs import compare_patches, post_versions
from review.diffs import parse_patch, render_patch, render_post_pair
from tests.diffs._html import parse

HOSTILE = [
    "<script>alert(1)</script>",
    '" onmouseover="alert(1)',
    "javascript:alert(1)",
    "<img src=x onerror=alert(1)>",
    "</td></tr></table><a href='javascript:alert(1)'>x</a>",
]


def _hostile_patch() -> str:
    name = 'evil<script>alert(1)</script>" onmouseover="x.py'
    body = "".join(f"+{h}\n" for h in HOSTILE)
    removed = "".join(f"-old {h}\n" for h in HOSTILE)
    n = len(HOSTILE)
    return (
        f"diff --git a/{name} b/{name}\n--- a/{name}\n+++ b/{name}\n"
        f"@@ -1,{n + 1} +1,{n + 1} @@ <script>section()</script>\n"
        f" # {HOSTILE[0]}\n{removed}{body}"
        "diff --git a/<b>.html b/<b>.html\nnew file mode 100644\n--- /dev/null\n+++ b/<b>.html\n"
        f"@@ -0,0 +1,{n} @@\n{body}"
    )


def _assert_inert(html: str) -> None:
    doc = parse(html)
    tags = {el.tag for el in doc.elements}
    assert tags <= {"table", "colgroup", "col", "thead", "tbody", "tr", "th", "td", "span"} | {
        "button"
    }
    for el in doc.elements:
        for attr, value in el.attrs.items():
            assert not attr.startswith("on"), (el.tag, attr)
            assert "javascript:" not in (value or "").lower(), (attr, value)
    text = "".join(doc.texts)
    for hostile in HOSTILE:
        assert hostile in text


def test_it_escapes_hostile_names_and_code() -> None:
    rendered = render_patch(_hostile_patch())
    assert [r.added for r in rendered] == [len(HOSTILE), len(HOSTILE)]
    for r in rendered:
        _assert_inert(r.html)
        assert "<script" not in r.html
        assert r.file_id.startswith("f-") and "<" not in r.file_id


def test_it_keeps_the_raw_path_only_as_an_escaped_attribute() -> None:
    first = render_patch(_hostile_patch())[0]
    table = parse(first.html).elements[0]
    assert table.attrs["data-file"] == first.path
    assert '" onmouseover="' in first.path and "onmouseover" not in table.attrs


def test_it_escapes_in_compare_mode() -> None:
    # Compare mode's table: the diff between two candidates' post-patch versions.
    other = _hostile_patch().replace(f"+{HOSTILE[1]}\n", f"+{HOSTILE[1]} <b>other</b>\n", 1)
    pairs = [
        post_versions(fc, {})
        for fc in compare_patches(parse_patch(_hostile_patch()), parse_patch(other))
        if fc.a is not None and fc.b is not None and not fc.identical
    ]
    assert pairs and all(p is not None for p in pairs)
    for pair in pairs:
        assert pair is not None
        rendered = render_post_pair(pair)
        assert rendered.differing
        _assert_inert(rendered.html)
        assert "<b>" not in rendered.html and "<b>other</b>" in "".join(parse(rendered.html).texts)


def test_it_hides_bidi_controls() -> None:
    diff = "--- a/x.py\n+++ b/x.py\n@@ -1 +1 @@\n-a = 1\n+a = '\u202eevil'\n"
    (rendered,) = render_patch(diff)
    assert "\u202e" not in rendered.html
