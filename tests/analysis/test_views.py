import random

from hypothesis import given, settings
from hypothesis import strategies as st

from grading.diffs import parse_patch as parse
from grading.grader.analysis.views import FileView, base_view, post_view, synthesize
from tests.analysis.helpers import diff

BASE = "".join(
    f"def f{i}(x):\n    if x > {i}:\n        return x - {i}\n    return {i}\n\n" for i in range(30)
)


def _edit(text: str, rng: random.Random) -> str:
    lines = text.splitlines(keepends=True)
    for _ in range(rng.randint(1, 4)):
        i = rng.randrange(len(lines))
        choice = rng.random()
        if choice < 0.4:
            lines[i] = lines[i].replace("return", "return 2 *")
        elif choice < 0.7:
            lines.insert(i, "    y = 1\n")
        else:
            del lines[i]
    return "".join(lines)


def test_it_never_raises_on_text_that_is_not_a_diff() -> None:
    for text in ("", "hello\n", "@@ -1 +1 @@\n-x\n", "--- a\n+++ b\n@@ garbage @@\n"):
        patch = parse(text)
        assert patch.files == () or not patch.problems


def test_it_sees_the_same_change_in_a_leading_newline_and_another_index_line() -> None:
    text = diff({"m.py": (BASE, BASE.replace("return 3\n", "return 4\n"))})
    other = "\n" + text.replace("diff --git", "diff --git", 1).replace(
        "diff --git a/m.py b/m.py\n", "diff --git a/m.py b/m.py\nindex 1111111..2222222 100644\n"
    )
    assert parse(text).normalised == parse(other).normalised
    assert (
        parse(text).normalised != parse(text.replace("+    return 4", "+    return 5")).normalised
    )


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 10_000))
def test_post_views_agree_with_the_real_post_file(seed: int) -> None:
    rng = random.Random(seed)
    after = _edit(BASE, rng)
    fp = parse(diff({"m.py": (BASE, after)})).files[0]
    real = dict(enumerate(after.splitlines(), 1))
    whole = post_view(FileView(dict(enumerate(BASE.splitlines(), 1)), True), fp)
    assert whole.complete and whole.lines == real
    partial = post_view(base_view("m.py", [fp], None), fp)
    assert all(real[n] == text for n, text in partial.lines.items())
    assert set(fp.added) <= set(partial.lines)


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 10_000))
def test_synthetic_sources_parse_and_map_back_to_real_lines(seed: int) -> None:
    rng = random.Random(seed)
    fp = parse(diff({"m.py": (BASE, _edit(BASE, rng))}, context=rng.randint(0, 3))).files[0]
    view = post_view(base_view("m.py", [fp], None), fp)
    syn = synthesize(view)
    assert syn.tree is not None
    for text, real in zip(syn.lines, syn.real, strict=True):
        if real is not None:
            assert view.lines[real] == text


def test_every_reviewed_file_of_the_real_data_synthesizes(shared_data) -> None:
    from grading.grader.analysis.devset import load

    for task in load(shared_data):
        patches = [parse(task.reference_patch), *map(parse, task.patches.values())]
        files = [f for p in patches for f in p.files]
        for fp in files:
            if fp.path.endswith(".py") and fp.old_path:
                base = base_view(fp.old_path, files, None)
                assert base is not None
                assert synthesize(base).tree is not None, (task.instance_id, fp.path)
                assert synthesize(post_view(base, fp)).tree is not None, (task.instance_id, fp.path)


# A formset module as Django has it: the hunk's context starts inside one docstring and ends
# on the next method's one-line docstring (django__django-16041, candidate "wrong layer").
FORMSET = '''class BaseFormSet:
    def __init__(self, form_kwargs=None):
        self.form_kwargs = form_kwargs or {}

    def get_form_kwargs(self, index):
        """
        Return additional keyword arguments for each individual formset form.

        index will be None if the form being constructed is a new empty
        form.
        """
        return self.form_kwargs.copy()

    def _construct_form(self, i, **kwargs):
        """Instantiate and return the i-th form instance in a formset."""
        return self.form(**kwargs)
'''


def test_a_hunk_starting_inside_a_docstring_keeps_its_code() -> None:
    after = FORMSET.replace(
        "        return self.form_kwargs.copy()\n",
        "        kwargs = self.form_kwargs.copy()\n"
        "        if index is None:\n"
        "            kwargs.pop('empty_permitted', None)\n"
        "        return kwargs\n",
    )
    fp = parse(diff({"formsets.py": (FORMSET, after)})).files[0]
    assert fp.hunks[0].lines[0].content.startswith("        index will be None")
    syn = synthesize(post_view(base_view("formsets.py", [fp], None), fp))
    assert syn.tree is not None
    # Only the docstring's head is left out; every added line of code is analysed.
    kept = {real for real in syn.real if real is not None}
    assert set(fp.added) <= kept
    assert syn.dropped <= set(range(9, 12))
