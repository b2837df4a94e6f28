from grading.diffs import parse_patch as parse
from grading.grader.analysis.analysers import (
    new_findings,
    pyflakes_findings,
    style_findings,
    vulture_findings,
)
from grading.grader.analysis.scopes import ScopeIndex, enclosing_spans, scopes_overlap
from grading.grader.analysis.views import FileView, base_view, post_view, synthesize
from tests.analysis.helpers import diff

SOURCE = """import os

LIMIT = 3


class Collector:
    def collect(self, objs):
        self.data = list(objs)

    def delete(self):
        for obj in self.data:
            if obj:
                obj.pk = None
        return len(self.data)


def helper(x):
    def inner(y):
        return y + 1
    return inner(x)
"""


def _whole(text: str) -> FileView:
    return FileView(dict(enumerate(text.splitlines(), 1)), True)


def test_it_names_the_enclosing_function_from_the_ast() -> None:
    idx = ScopeIndex(_whole(SOURCE))
    assert idx.scope(13) == "Collector.delete"
    assert idx.scope(19) == "helper.inner"
    assert idx.scope(3) == "LIMIT"
    assert idx.scope(1) == "<imports>"


def test_partial_views_name_blocks_the_same_way_for_every_patch() -> None:
    edited = SOURCE.replace("obj.pk = None", "obj.pk = 0")
    other = SOURCE.replace("return len(self.data)", "return 0")
    a, b = parse(diff({"m.py": (SOURCE, edited)}, 1)), parse(diff({"m.py": (SOURCE, other)}, 1))
    files = [*a.files, *b.files]
    idx = ScopeIndex(base_view("m.py", files, None))
    # Both changes sit in Collector.delete; the pooled view shows no column-0 line above them.
    assert idx.scope(13) == idx.scope(14)
    assert idx.scope(13).startswith("@")
    assert scopes_overlap("Collector.delete", "Collector") and not scopes_overlap("a.b", "a.c")
    assert not scopes_overlap("<module>", "Collector")


def _syn(before: str, after: str):
    fp = parse(diff({"m.py": (before, after)})).files[0]
    base = base_view("m.py", [fp], None)
    return fp, synthesize(base), synthesize(post_view(base, fp))


def test_only_findings_on_added_lines_that_were_not_there_before_count() -> None:
    before = "import os\nimport sys\n\n\ndef f():\n    return sys.argv\n"
    after = "import os\nimport sys\nimport json\n\n\ndef f():\n    return sys.argv\n"
    fp, pre, post = _syn(before, after)
    found = new_findings(pyflakes_findings(post, "m.py"), pyflakes_findings(pre, "m.py"), fp.added)
    # `os` was already unused: only the new `json` import counts.
    assert [(f.code, f.line) for f in found] == [("UnusedImport", 3)]


def test_style_checks_use_the_given_line_limit_and_see_whitespace_lines() -> None:
    before = "def f(x):\n    y = x\n    return y\n"
    after = "def f(x):\n    y = x\n    \n    return y  # " + "z" * 80 + "\n"
    fp, pre, post = _syn(before, after)
    codes = {
        f.code for f in new_findings(style_findings(post, 79), style_findings(pre, 79), fp.added)
    }
    assert codes == {"W293", "E501"}
    assert "E501" not in {f.code for f in style_findings(post, 200)}


def test_vulture_finds_a_duplicated_return() -> None:
    before = "def f(x):\n    y = x\n    return y\n"
    after = "def f(x):\n    y = x\n    return y\n    return y\n"
    fp, pre, post = _syn(before, after)
    found = vulture_findings([("m.py", post)])["m.py"]
    fresh = new_findings(found, vulture_findings([("m.py", pre)])["m.py"], fp.added)
    assert [(f.code, f.line) for f in fresh] == [("unreachable_code", 4)]


def test_enclosing_spans_are_whole_functions_or_top_level_statements() -> None:
    tree = synthesize(_whole(SOURCE)).tree
    assert tree is not None
    assert enclosing_spans(tree, {13}) == {(10, 14)}  # Collector.delete, not the class
    assert enclosing_spans(tree, {19}) == {(18, 19)}  # helper.inner
    assert enclosing_spans(tree, {3, 16}) == {(3, 3), (16, 16)}  # LIMIT; a blank line
