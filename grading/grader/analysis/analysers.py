"""Maintained analysers run on synthetic sources: pyflakes, pycodestyle and vulture.

Each finding carries a `key` without line numbers (the checker's code and the line's text or the
message arguments), so the findings of the post-patch file can be compared with those of the
pre-patch file: only findings on lines the candidate added, and not already present before,
count against it (`new_findings`). Findings on lines the synthesis inserted are dropped.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache

import pycodestyle
import vulture
from pyflakes import checker as pyflakes_checker

from grading.grader.analysis.views import Synthetic

# Style checks a reviewer reads as noise: indentation and continuation lines, line length,
# trailing whitespace, tabs. Blank-line counts (E3) are left out: the synthesis changes them.
_STYLE_SELECT = ("E1", "E501", "W191", "W291", "W293")
# pyflakes messages that depend on code the partial view cannot show (the enclosing function or
# loop may lie in a gap, names may be defined there).
_NEEDS_WHOLE_FILE = {
    "UndefinedName", "UndefinedExport", "UndefinedLocal", "ImportStarUsage",
    "ReturnOutsideFunction", "YieldOutsideFunction", "ContinueOutsideLoop", "BreakOutsideLoop",
}  # fmt: skip


@dataclass(frozen=True)
class Finding:
    tool: str  # pyflakes | pycodestyle | vulture
    code: str  # e.g. UnusedImport, E501, W293, unreachable_code, function
    line: int  # real line number in the file the analyser read
    message: str
    key: tuple[str, str]  # identity without the line number, for pre/post comparison


class _Collect(pycodestyle.BaseReport):  # type: ignore[misc]  # pycodestyle ships no types
    def __init__(self, options: object) -> None:
        super().__init__(options)
        self.found: list[tuple[int, str, str]] = []

    def error(self, line_number: int, offset: int, text: str, check: object) -> str | None:
        code = text[:4]
        if self._ignore_code(code):
            return None
        self.found.append((line_number, code, text[5:]))
        return code


@lru_cache(maxsize=16)
def _style(max_line_length: int) -> pycodestyle.StyleGuide:
    return pycodestyle.StyleGuide(
        select=list(_STYLE_SELECT), max_line_length=max_line_length, quiet=True, reporter=_Collect
    )


def _text_of(syn: Synthetic, real: int) -> str:
    try:
        return syn.lines[syn.real.index(real)].strip()
    except ValueError:
        return ""


def pyflakes_findings(syn: Synthetic, path: str) -> list[Finding]:
    if syn.tree is None:
        return []
    out = []
    for msg in pyflakes_checker.Checker(syn.tree, filename=path).messages:
        code = type(msg).__name__
        real = syn.real_line(msg.lineno)
        if real is None or (code in _NEEDS_WHOLE_FILE and not syn.complete):
            continue
        text = msg.message % msg.message_args
        out.append(Finding("pyflakes", code, real, text, (code, str(msg.message_args))))
    return out


def style_findings(syn: Synthetic, max_line_length: int) -> list[Finding]:
    if syn.tree is None:
        return []
    guide = _style(max_line_length)
    report = _Collect(guide.options)
    lines = [ln + "\n" for ln in syn.lines]
    pycodestyle.Checker(lines=lines, options=guide.options, report=report).check_all()
    out = []
    for n, code, text in report.found:
        real = syn.real_line(n)
        if real is not None:
            out.append(Finding("pycodestyle", code, real, text, (code, syn.lines[n - 1].strip())))
    return out


def vulture_findings(files: Sequence[tuple[str, Synthetic]]) -> dict[str, list[Finding]]:
    """Unreachable code and unused definitions, with usages counted across all `files`."""
    v = vulture.Vulture()
    parsed = [(path, syn) for path, syn in files if syn.tree is not None]
    for path, syn in parsed:
        v.scan(syn.text, filename=path)
    by_path: dict[str, list[Finding]] = {path: [] for path, _ in parsed}
    syn_of = dict(parsed)
    for item in v.get_unused_code(min_confidence=0):
        path = str(item.filename)
        found = syn_of.get(path)
        real = found.real_line(item.first_lineno) if found is not None else None
        if found is None or real is None:
            continue
        syn = found
        name = str(item.name)
        key = (str(item.typ), _text_of(syn, real) if item.typ == "unreachable_code" else name)
        by_path[path].append(Finding("vulture", str(item.typ), real, str(item.message), key))
    return by_path


def new_findings(
    post: Iterable[Finding], pre: Iterable[Finding], added: Iterable[int]
) -> list[Finding]:
    """Post findings on added lines whose key the pre findings do not already have (as often)."""
    before = Counter(f.key for f in pre)
    lines = set(added)
    out = []
    for f in sorted(post, key=lambda f: (f.line, f.code)):
        if f.line not in lines:
            continue
        if before[f.key] > 0:
            before[f.key] -= 1
            continue
        out.append(f)
    return out
