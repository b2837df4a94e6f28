"""The enclosing function or class of a line: what a reviewer means by "where the fix is".

A scope is a dotted qualified name (`Collector.delete`, `MatrixShaping._eval_col_insert.entry`)
or, for module-level code, the assigned name (`FILE_UPLOAD_PERMISSIONS`), `<imports>` or
`<module>`. On a whole file the scope comes from the AST. On a partial view (no repository) it
comes from the indentation of the visible lines above, the same rule the AST encodes, falling
names the block by its first base line when no column-0 line is visible above it (git's hunk
headers are not used: the reference and the candidates were diffed with different drivers).
"""

from __future__ import annotations

import ast
import re
from functools import cached_property

from grading.grader.analysis.views import FileView, _indent, _parse

_DEF = re.compile(r"^\s*(?:async\s+)?(def|class)\s+([A-Za-z_]\w*)")
_ASSIGN = re.compile(r"^([A-Za-z_]\w*)\s*(?::[^=]*)?=(?!=)")


def scopes_overlap(a: str, b: str) -> bool:
    """Same place: equal, or one encloses the other (module-level scopes only match exactly)."""
    if a == b:
        return True
    if a.startswith("<") or b.startswith("<"):
        return False
    return a.startswith(b + ".") or b.startswith(a + ".")


class ScopeIndex:
    def __init__(self, view: FileView, tree: ast.Module | None = None) -> None:
        self.view = view
        self.parsed = tree  # the whole file's tree when the caller already has it

    @cached_property
    def _tree(self) -> tuple[list[tuple[int, int, str]], list[ast.stmt]] | None:
        """(start, end, qualname) of every def/class and the top-level statements (whole file)."""
        if not self.view.complete:
            return None
        tree = self.parsed
        if tree is None:
            text = "\n".join(self.view.lines[n] for n in sorted(self.view.lines)) + "\n"
            try:
                tree = _parse(text)
            except SyntaxError:
                return None
        defs: list[tuple[int, int, str]] = []

        def walk(node: ast.AST, prefix: str) -> None:
            for child in _statements(node):
                if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                    name = f"{prefix}{child.name}"
                    start = min([child.lineno] + [d.lineno for d in child.decorator_list])
                    defs.append((start, child.end_lineno or child.lineno, name))
                    walk(child, name + ".")
                else:
                    walk(child, prefix)

        walk(tree, "")
        return defs, tree.body

    def scope(self, line: int) -> str:
        parsed = self._tree
        if parsed is None:
            return self._scan(line)
        defs, body = parsed
        inside = [t for t in defs if t[0] <= line <= t[1]]
        if inside:
            return max(inside, key=lambda t: t[0])[2]
        for stmt in body:
            if stmt.lineno <= line <= (stmt.end_lineno or stmt.lineno):
                return _module_scope(stmt)
        return "<module>"

    def _scan(self, line: int) -> str:
        """Walk up the contiguous visible block; a block that never reaches column 0 is named
        by where it starts in the base file (`@212.empty_form`), the same for every patch."""
        lines = self.view.lines
        here = lines.get(line, "")
        names: list[str] = []
        m = _DEF.match(here)
        if m:
            names.append(m.group(2))
        target = _indent(here) if here.strip() else _indent(lines.get(line + 1, ""))
        if target == 0 and here.strip():
            return ".".join(names) if names else _module_text_scope(here)
        top = line
        while top - 1 in lines:
            top -= 1
            text = lines[top]
            if not text.strip() or text.strip().startswith("#") or _indent(text) >= target:
                continue
            m = _DEF.match(text)
            if m:
                names.append(m.group(2))
            target = _indent(text)
            if target == 0:
                return ".".join(reversed(names)) if names else _module_text_scope(text)
        region = f"@{self._region(top)}"
        return ".".join([region, *reversed(names)])

    def _region(self, top: int) -> int:
        origin = self.view.origin
        n = top
        while n in self.view.lines:
            if n in origin:
                return origin[n]
            n += 1
        return top


def enclosing_spans(tree: ast.Module, lines: set[int]) -> set[tuple[int, int]]:
    """For each line, the lines of the innermost function around it (decorators included), else
    of the top-level statement around it; a line outside every statement (a comment, a blank)
    is its own span. Each span is whole code, so a view cut to the spans still parses."""
    spans: set[tuple[int, int]] = set()
    for line in lines:
        best: tuple[int, int] | None = None
        top: tuple[int, int] | None = None
        node: ast.AST = tree
        while True:
            inner = next((s for s in _statements(node)
                          if _first(s) <= line <= (s.end_lineno or s.lineno)), None)  # fmt: skip
            if inner is None:
                break
            span = (_first(inner), inner.end_lineno or inner.lineno)
            top = top or span
            if isinstance(inner, ast.FunctionDef | ast.AsyncFunctionDef):
                best = span
            node = inner
        spans.add(best or top or (line, line))
    return spans


def _first(stmt: ast.stmt) -> int:
    decorators: list[ast.expr] = getattr(stmt, "decorator_list", None) or []
    return min([stmt.lineno] + [d.lineno for d in decorators])


def _statements(node: ast.AST) -> list[ast.stmt]:
    """The statements directly inside a statement's blocks (defs and classes only ever sit in
    statement blocks, so expressions need not be walked)."""
    out: list[ast.stmt] = []
    for name in ("body", "orelse", "finalbody"):
        out += [s for s in getattr(node, name, None) or () if isinstance(s, ast.stmt)]
    for handler in getattr(node, "handlers", None) or ():
        out += handler.body
    for case in getattr(node, "cases", None) or ():
        out += case.body
    return out


def _module_scope(stmt: ast.stmt) -> str:
    if isinstance(stmt, ast.Import | ast.ImportFrom):
        return "<imports>"
    targets: list[ast.expr] = []
    if isinstance(stmt, ast.Assign):
        targets = stmt.targets
    elif isinstance(stmt, ast.AnnAssign | ast.AugAssign):
        targets = [stmt.target]
    names = [t.id for t in targets if isinstance(t, ast.Name)]
    return names[0] if names else "<module>"


def _module_text_scope(text: str) -> str:
    stripped = text.strip()
    if stripped.startswith(("import ", "from ")):
        return "<imports>"
    m = _ASSIGN.match(stripped)
    return m.group(1) if m and _indent(text) == 0 else "<module>"
