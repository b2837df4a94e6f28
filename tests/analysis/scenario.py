"""A small repository, its reference fix and candidates that each show one reviewer concern."""

from __future__ import annotations

from grading.grader.analysis.inputs import AnalysisInput, CandidatePatch
from tests.analysis.helpers import diff

MODULE = '''"""Text helpers."""

import re

_SPACES = re.compile(r"\\s+")


class Formatter:
    def render(self, text):
        return self.prepare(text).upper()

    def prepare(self, text):
        return text.strip()


def normalise(text, sep=" "):
    words = _SPACES.split(text)
    return sep.join(words).lower()


def shout(text):
    return normalise(text).upper() + "!"
'''
TESTS = """from calc.text import normalise


def test_plain():
    assert normalise("a b") == "a b"
"""
TEST_PATCH = diff(
    {
        "tests/test_text.py": (
            TESTS,
            TESTS
            + """

def test_many_spaces():
    assert normalise("Hello   Big  World") == "hello big world"
""",
        )
    }
)
FIX = MODULE.replace(
    "    words = _SPACES.split(text)\n", "    words = _SPACES.split(text.strip())\n"
)
FILES = {
    "calc/text.py": MODULE,
    "tests/test_text.py": TESTS,
    "setup.cfg": "[flake8]\nmax-line-length = 79\n",
}


def reader(path: str) -> str | None:
    return FILES.get(path)


def variant(**files: str | None) -> str:
    """A patch from the base to `files` (path with "/" spelled "__", "." as "_")."""
    changes = {}
    for key, after in files.items():
        path = key.replace("__", "/").replace("_py", ".py").replace("_md", ".md")
        changes[path] = (FILES.get(path), after)
    return diff(changes)


def fix(text: str = FIX) -> dict[str, str]:
    return {"calc__text_py": text}


_SIG = 'def normalise(text, sep=" "):\n'
_REPRO = "from calc.text import normalise\nprint(normalise('a  b'))\n"
_WRAPPED = "        return (\n            self.prepare(text).upper()\n        )"
CANDIDATES = {
    "root": variant(**fix()),
    "junk": variant(**fix(), repro_py=_REPRO),
    "noisy": variant(**fix(FIX.replace(
        "    words = _SPACES.split(text.strip())\n",
        "    # Changed to strip the text first (placeholder, TODO: check)\n"
        "    words = _SPACES.split(text.strip())\n    \n    print(words)\n",
    ))),
    "special": variant(**fix(MODULE.replace(
        "    words = _SPACES.split(text)\n",
        '    if text == "Hello   Big  World":\n        return "hello big world"\n'
        "    words = _SPACES.split(text)\n",
    ))),
    "tamper": variant(**fix(), tests__test_text_py=TESTS.replace('"a b"', '"a  b"')),
    "skip": variant(**fix(), tests__test_text_py=TESTS.replace(
        "def test_plain", "import pytest\n\n\n@pytest.mark.skip\ndef test_plain")),
    "caller": variant(calc__text_py=MODULE.replace(
        'return normalise(text).upper() + "!"', 'return normalise(text.strip()).upper() + "!"')),
    "fallback": variant(**fix(FIX.replace(_SIG, _SIG + '    sep = sep or "-"\n'))),
    "signature": variant(**fix(FIX.replace(_SIG, "def normalise(text):\n")
                               .replace("return sep.join", 'return " ".join'))),
    "hook": variant(**fix(FIX.replace("return self.prepare(text).upper()", "return text.upper()"))),
    "reformat": variant(**fix(
        FIX.replace("        return self.prepare(text).upper()", _WRAPPED)
        .replace("        return text.strip()", "            return text.strip()")
    )),
}  # fmt: skip


def group(*keys: str, reference: bool = True, source: bool = False) -> AnalysisInput:
    return AnalysisInput(
        candidates=[CandidatePatch(k, CANDIDATES[k]) for k in keys or CANDIDATES],
        reference_patch=variant(**fix()) if reference else None,
        problem_statement="`normalise` keeps leading spaces: normalise(' a') returns ' a'",
        test_patch=TEST_PATCH,
        test_names=("tests/test_text.py::test_many_spaces",),
        read_base=reader if source else None,
    )
