"""What is shared by every candidate of a group: parsed patches, base views, tests, config."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from itertools import pairwise
from typing import Any, TypeVar, cast

from grading.diffs import FileDiff, Patch, parse_patch
from grading.grader.analysis import pyfacts
from grading.grader.analysis.inputs import AnalysisInput
from grading.grader.analysis.paths import (
    inferred_line_limit,
    is_junk,
    is_test_path,
    line_limit,
    min_python,
)
from grading.grader.analysis.scopes import ScopeIndex, enclosing_spans
from grading.grader.analysis.views import FileView, Synthetic, base_view, post_view, synthesize

T = TypeVar("T")
_NEAR = 200  # files up to this long are checked whole by `post_near`
# Python's frames (`File "x.py", line 3, in f`) and pytest's (`x.py:3: in f`).
_TRACEBACK_FRAME = re.compile(r'File "([^"]+)", line \d+, in (\w+)|([\w./\\-]+\.py):\d+: in (\w+)')
# A quoted line this short (`return x`, `raise`) could be anywhere: it locates nothing.
_QUOTED_MIN = 12
_CODE_SPAN = re.compile(r"`([^`\n]+)`")
_CALLED = re.compile(r"\b([A-Za-z_]\w{2,})\s*\(")
_IDENT = re.compile(r"[A-Za-z_]\w{2,}")


@dataclass
class GroupContext:
    inp: AnalysisInput
    patches: dict[str, Patch] = field(init=False)
    reference: Patch | None = field(init=False)
    _base: dict[str, FileView | None] = field(default_factory=dict, init=False)
    _base_syn: dict[str, Synthetic] = field(default_factory=dict, init=False)
    _memo: dict[object, Any] = field(default_factory=dict, init=False)

    def __post_init__(self) -> None:
        self.patches = {c.key: parse_patch(c.patch) for c in self.inp.candidates}
        ref = self.inp.reference_patch
        self.reference = parse_patch(ref) if ref and ref.strip() else None
        if self.reference is not None and not self.reference.files:
            self.reference = None

    @cached_property
    def _all_files(self) -> list[FileDiff]:
        pats = [*self.patches.values(), self.test_patch]
        if self.reference is not None:
            pats.append(self.reference)
        return [f for p in pats for f in p.files]

    @cached_property
    def test_patch(self) -> Patch:
        return parse_patch(self.inp.test_patch) if self.inp.test_patch.strip() else Patch()

    def base(self, path: str | None) -> FileView | None:
        if path is None:
            return None
        if path not in self._base:
            self._base[path] = base_view(path, self._all_files, self.inp.read_base)
        return self._base[path]

    def base_syn(self, path: str) -> Synthetic | None:
        view = self.base(path)
        if view is None:
            return None
        if path not in self._base_syn:
            self._base_syn[path] = synthesize(view)
        return self._base_syn[path]

    def cached(self, key: object, compute: Callable[[], T]) -> T:
        """A result shared by the group's candidates (analyses of the base files)."""
        if key not in self._memo:
            self._memo[key] = compute()
        return cast(T, self._memo[key])

    def post(self, fp: FileDiff) -> FileView:
        return self.cached(("post", id(fp)), lambda: post_view(self.base(fp.old_path), fp))

    def post_syn(self, fp: FileDiff) -> Synthetic:
        return self.cached(("post_syn", id(fp)), lambda: synthesize(self.post(fp)))

    def post_near(self, fp: FileDiff) -> Synthetic:
        """The post file near the added lines, for checks whose findings only count there
        (style, unreachable code, comments): a whole file is cut to the functions (or top-level
        statements) around its added lines, so a large module is not re-checked in full for
        every candidate."""
        view, whole = self.post(fp), self.post_syn(fp)
        if not view.complete or whole.tree is None or whole.dropped or view.max_line() <= _NEAR:
            return whole
        spans = enclosing_spans(whole.tree, set(fp.added))
        keep = {n for lo, hi in spans for n in range(lo, hi + 1) if n in view.lines}
        return synthesize(FileView({n: view.lines[n] for n in sorted(keep)}, False))

    def pre_scopes(self, path: str) -> ScopeIndex | None:
        view = self.base(path)
        if view is None:
            return None
        syn = self.base_syn(path)
        tree = syn.tree if syn is not None and syn.complete and not syn.dropped else None
        return self.cached(("pre_scopes", path), lambda: ScopeIndex(view, tree))

    # What a file is -----------------------------------------------------------------------

    @cached_property
    def test_paths(self) -> set[str]:
        paths = {f.path for f in self.test_patch.files}
        for test_id in self.inp.test_names:
            head = test_id.split("::", 1)[0].strip()
            if head.endswith(".py"):
                paths.add(head)
        return paths

    def is_test(self, path: str) -> bool:
        return path in self.test_paths or is_test_path(path)

    def is_junk(self, fp: FileDiff) -> bool:
        return is_junk(fp.path, is_new=fp.is_new) and fp.path not in self.test_paths

    def is_core(self, fp: FileDiff) -> bool:
        return not fp.is_binary and not self.is_test(fp.path) and not self.is_junk(fp)

    # What the tests and the repository say ------------------------------------------------

    @cached_property
    def test_literals(self) -> set[str]:
        """Literal values of the tests: the test patch's added lines, the deciding test files
        at the base commit (with a repository) and the test ids' parameters."""
        out: set[str] = set()
        for fp in self.test_patch.files:
            if fp.path.endswith(".py"):
                out |= pyfacts.literals(synthesize(self.post(fp)), set(fp.added))
        for path in sorted(self.test_paths):
            view = self.base(path)
            if view is not None and view.complete and path.endswith(".py"):
                out |= pyfacts.all_literals(synthesize(view))
        for test_id in self.inp.test_names:
            name = test_id.rsplit("::", 1)[-1]
            params = re.findall(r"\[(.+)\]$", name)
            out.add(f"s:{name.split('[', 1)[0]}")
            for p in params:
                out |= {f"s:{p}", *(f"s:{part}" for part in p.split("-") if len(part) >= 2)}
        return out

    @cached_property
    def configured_line_limit(self) -> int | None:
        return line_limit(self.inp.read_base)

    def line_limit(self, path: str) -> int | None:
        """The configured limit, else the smallest conventional one that the file's visible
        lines and the reference's added lines respect (maintainers keep to their limit)."""
        if self.configured_line_limit is not None:
            return self.configured_line_limit
        view = self.base(path)
        seen = [len(t) for t in view.lines.values()] if view is not None else []
        if self.reference is not None:
            seen += [
                len(t) for f in self.reference.files if f.path == path for t in f.added.values()
            ]
        return inferred_line_limit(max(seen, default=0))

    @cached_property
    def min_python(self) -> tuple[int, int] | None:
        return min_python(self.inp.read_base)

    @cached_property
    def problem_names(self) -> set[str]:
        """Functions, classes and files the problem statement points at (traceback, code)."""
        text = self.inp.problem_statement
        names: set[str] = set()
        for frame in _TRACEBACK_FRAME.finditer(text):
            path, func = frame.group(1) or frame.group(3), frame.group(2) or frame.group(4)
            names |= {func, path.replace("\\", "/").rsplit("/", 1)[-1].removesuffix(".py")}
        for span in _CODE_SPAN.findall(text):
            names |= set(_IDENT.findall(span))
        names |= set(_CALLED.findall(text))
        return {n for n in names if n != "module"}

    @cached_property
    def problem_frame_lines(self) -> frozenset[tuple[str, str]]:
        """(file name, source line) a traceback in the problem statement quotes under each
        frame (whitespace-normalised; pytest's `>` marker dropped): a changed block of that file
        that shows the line is in that frame's function, even where no visible line names it."""
        lines = self.inp.problem_statement.splitlines()
        quoted = set()
        for here, after in pairwise(lines):
            frame = _TRACEBACK_FRAME.search(here)
            code = " ".join(after.strip().removeprefix(">").split())
            if frame and len(code) >= _QUOTED_MIN:
                path = (frame.group(1) or frame.group(3)).replace("\\", "/")
                quoted.add((path.rsplit("/", 1)[-1], code))
        return frozenset(quoted)


def _longest(view: FileView) -> int:
    return max((len(t) for t in view.lines.values()), default=0)
