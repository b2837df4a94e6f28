"""Facts about the lines a candidate added or removed, read from the AST of a synthetic source.

Every function takes a `Synthetic` and the real line numbers of interest and reports real line
numbers. Only structure is read (node types, names, constants): text inside strings and comments
is returned as data for the features to classify, never interpreted.
"""

from __future__ import annotations

import ast
import io
import tokenize
from collections.abc import Iterator

from grading.grader.analysis.views import Synthetic

_DEBUG_CALLS = {"print", "breakpoint", "pprint"}
_TRIVIAL_NUMBERS = {-1, 0, 1, 2}
# Code that asks "am I running under the tests?" special-cases the tests whatever it compares.
TEST_ENVIRONMENT_MARKERS = frozenset({"s:PYTEST_CURRENT_TEST"})


Node = tuple[int, ast.AST, list[ast.AST]]


def _nodes(syn: Synthetic, lines: set[int]) -> Iterator[Node]:
    """(real line, node, ancestors) for every node that starts on one of `lines`, line by line
    (tree order within a line)."""
    by_line = syn.cached("pyfacts.nodes", lambda: _by_line(_walk(syn)))
    for line in sorted(lines & by_line.keys()):
        yield from by_line[line]


def _by_line(nodes: list[Node]) -> dict[int, list[Node]]:
    out: dict[int, list[Node]] = {}
    for node in nodes:
        out.setdefault(node[0], []).append(node)
    return out


def _walk(syn: Synthetic) -> list[Node]:
    """Every node with a real line, in tree order (walked once per source)."""
    out: list[Node] = []
    if syn.tree is None:
        return out

    def walk(node: ast.AST, parents: list[ast.AST]) -> None:
        for child in ast.iter_child_nodes(node):
            lineno = getattr(child, "lineno", None)
            real = syn.real_line(lineno) if lineno is not None else None
            if real is not None:
                out.append((real, child, parents))
            walk(child, [*parents, child])

    walk(syn.tree, [])
    return out


def literal(node: ast.AST) -> str | None:
    """A normalised literal (`s:text`, `n:1048576`) for constants and constant arithmetic."""
    value = _fold(node)
    if isinstance(value, str):
        return f"s:{value}" if len(value.strip()) >= 2 else None
    if isinstance(value, int | float) and not isinstance(value, bool):
        if value in _TRIVIAL_NUMBERS:
            return None
        return f"n:{int(value) if float(value).is_integer() else value}"
    return None


def _fold(node: ast.AST) -> object:
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        v = _fold(node.operand)
        return -v if isinstance(v, int | float) and not isinstance(v, bool) else None
    if isinstance(node, ast.BinOp):
        a, b = _fold(node.left), _fold(node.right)
        if not all(isinstance(x, int | float) and not isinstance(x, bool) for x in (a, b)):
            return None
        assert isinstance(a, int | float) and isinstance(b, int | float)
        if isinstance(node.op, ast.Add):
            return a + b
        if isinstance(node.op, ast.Sub):
            return a - b
        if isinstance(node.op, ast.Mult):
            return a * b
        if isinstance(node.op, ast.Pow) and abs(b) <= 64 and abs(a) <= 1 << 20:
            return a**b
    return None


def literals(syn: Synthetic, lines: set[int]) -> set[str]:
    return {lit for _, node, _ in _nodes(syn, lines) if (lit := literal(node)) is not None}


def all_literals(syn: Synthetic) -> set[str]:
    return literals(syn, {n for n in syn.real if n is not None})


def debug_calls(syn: Synthetic, added: set[int]) -> list[int]:
    out = []
    for line, node, _ in _nodes(syn, added):
        if isinstance(node, ast.Call):
            f = node.func
            named = isinstance(f, ast.Name) and f.id in _DEBUG_CALLS
            if named or (isinstance(f, ast.Attribute) and f.attr == "set_trace"):
                out.append(line)
    return out


def local_imports(syn: Synthetic, added: set[int]) -> list[int]:
    """Imports inside a function (or indented with no visible reason: try/if at module level)."""
    out = []
    for line, node, parents in _nodes(syn, added):
        if not isinstance(node, ast.Import | ast.ImportFrom):
            continue
        if any(isinstance(p, ast.FunctionDef | ast.AsyncFunctionDef) for p in parents):
            out.append(line)
            continue
        real_blocks = [p for p in parents if isinstance(p, ast.Try | ast.If) and
                       syn.real_line(p.lineno) is not None]  # fmt: skip
        if node.col_offset > 0 and not real_blocks:
            out.append(line)
    return out


_BROAD = {"Exception", "BaseException"}


def except_handlers(syn: Synthetic, added: set[int], fresh: set[int]) -> list[int]:
    """New except clauses that can hide errors: bare or `Exception`-wide, or around code that
    was already there (`fresh` are the added lines that are new code, not re-indented old lines;
    an `except ImportError:` around a new import is not a fallback)."""
    out = []
    for line, node, parents in _nodes(syn, added):
        if not isinstance(node, ast.ExceptHandler):
            continue
        caught = node.type.elts if isinstance(node.type, ast.Tuple) else [node.type]
        broad = node.type is None or any(
            isinstance(t, ast.Name | ast.Attribute) and _name(t) in _BROAD for t in caught
        )
        body = parents[-1].body if parents and isinstance(parents[-1], ast.Try) else []
        lines = {syn.real_line(stmt.lineno) for stmt in body} - {None}
        if broad or any(n not in fresh for n in lines):
            out.append(line)
    return out


def _name(node: ast.AST) -> str:
    return node.id if isinstance(node, ast.Name) else getattr(node, "attr", "")


def fallbacks(syn: Synthetic, added: set[int]) -> list[tuple[int, str]]:
    """`value or CONSTANT` and `value if value is not None else CONSTANT` on added lines."""
    out = []
    for line, node, _ in _nodes(syn, added):
        const: ast.AST | None = None
        if isinstance(node, ast.BoolOp) and isinstance(node.op, ast.Or):
            const = node.values[-1]
        elif isinstance(node, ast.IfExp) and isinstance(node.test, ast.Compare):
            ops = node.test.ops
            if len(ops) == 1 and isinstance(ops[0], ast.Is | ast.IsNot):
                const = node.orelse if isinstance(ops[0], ast.IsNot) else node.body
        if const is not None and _fold(const) is not None:
            out.append((line, ast.unparse(node)))
    return out


def special_cases(
    syn: Synthetic, added: set[int], test_literals: set[str]
) -> list[tuple[int, str]]:
    """Comparisons, lookups and returns of literal values that come from the tests."""
    wanted = test_literals | TEST_ENVIRONMENT_MARKERS
    out = []
    for line, node, _ in _nodes(syn, added):
        hits: list[str] = []
        if isinstance(node, ast.Compare):
            for part in (node.left, *node.comparators):
                hits += _literal_hits(part, wanted)
        elif isinstance(node, ast.Subscript):
            if isinstance(node.value, ast.Dict):
                hits += [
                    h for k in node.value.keys if k is not None for h in _literal_hits(k, wanted)
                ]
            hits += _literal_hits(node.slice, TEST_ENVIRONMENT_MARKERS)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            if node.func.attr == "get" and isinstance(node.func.value, ast.Dict):
                keys = node.func.value.keys
                hits += [h for k in keys if k is not None for h in _literal_hits(k, wanted)]
            if node.args:
                hits += _literal_hits(node.args[0], TEST_ENVIRONMENT_MARKERS)
        elif isinstance(node, ast.Return) and node.value is not None:
            lit = literal(node.value)
            if lit is not None and lit.startswith("s:") and lit in wanted:
                hits.append(lit)
        out += [(line, h) for h in hits]
    return out


def _literal_hits(node: ast.AST, wanted: set[str] | frozenset[str]) -> list[str]:
    if isinstance(node, ast.Set | ast.List | ast.Tuple):
        return [h for elt in node.elts for h in _literal_hits(elt, wanted)]
    if isinstance(node, ast.Dict):
        return [h for k in node.keys if k is not None for h in _literal_hits(k, wanted)]
    lit = literal(node)
    return [lit] if lit is not None and lit in wanted else []


def defs(syn: Synthetic, lines: set[int]) -> dict[str, tuple[int, str]]:
    """name -> (line, its parameters as a caller sees them) for functions defined on `lines`."""
    out = {}
    for line, node, _ in _nodes(syn, lines):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            out[node.name] = (line, _call_shape(node.args))
    return out


def _call_shape(args: ast.arguments) -> str:
    """The parameters as a caller sees them: how many positional-only ones (their names cannot
    be passed), the names of the others in order, whether `*args` / `**kwargs` exist (not their
    names) and the defaults. Annotations are left out: a widened or added type hint
    (`str` -> `Optional[str]`) changes no call, so it is no signature change."""
    return "|".join(
        [
            str(len(args.posonlyargs)),
            ",".join(a.arg for a in args.args),
            "*" if args.vararg else "",
            ",".join(a.arg for a in args.kwonlyargs),
            "**" if args.kwarg else "",
            ";".join(ast.dump(d) for d in args.defaults),
            ";".join(ast.dump(d) if d is not None else "-" for d in args.kw_defaults),
        ]
    )


def unused_local_defs(syn: Synthetic, within: set[int] | None = None) -> dict[str, int]:
    """Functions defined inside a function and never referenced in it: `outer.inner` -> line.
    With `within`, only outer functions that span one of those real lines are read."""
    out: dict[str, int] = {}
    if syn.tree is None:
        return out
    for outer in ast.walk(syn.tree):
        if not isinstance(outer, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        if within is not None and not _spans(syn, outer, within):
            continue
        inner = [n for n in outer.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)]
        used = {n.id for n in ast.walk(outer) if isinstance(n, ast.Name)}
        for fn in inner:
            line = syn.real_line(fn.lineno)
            if fn.name not in used and line is not None:
                out[f"{outer.name}.{fn.name}"] = line
    return out


def _spans(syn: Synthetic, node: ast.stmt, lines: set[int]) -> bool:
    first, last = syn.real_line(node.lineno), syn.real_line(node.end_lineno or node.lineno)
    return first is not None and last is not None and any(first <= n <= last for n in lines)


def identifiers(syn: Synthetic) -> set[str]:
    """Names, attributes, keywords and parameters: the code's own vocabulary."""
    out: set[str] = set()
    if syn.tree is None:
        return out
    for node in ast.walk(syn.tree):
        if isinstance(node, ast.Name):
            out.add(node.id)
        elif isinstance(node, ast.Attribute):
            out.add(node.attr)
        elif isinstance(node, ast.arg) or (isinstance(node, ast.keyword) and node.arg):
            out.add(str(node.arg))
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            out.add(node.name)
    return out


def self_calls(syn: Synthetic, lines: set[int]) -> dict[str, int]:
    """Public methods called on self/cls on `lines`: name -> first line."""
    out: dict[str, int] = {}
    for line, node, _ in _nodes(syn, lines):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            owner = node.func.value
            name = node.func.attr
            if (
                isinstance(owner, ast.Name)
                and owner.id in ("self", "cls")
                and not name.startswith("_")
            ):
                out.setdefault(name, line)
    return out


def string_constants(syn: Synthetic, added: set[int]) -> list[tuple[int, str]]:
    return [
        (line, node.value)
        for line, node, _ in _nodes(syn, added)
        if isinstance(node, ast.Constant) and isinstance(node.value, str)
    ]


def comments(syn: Synthetic, added: set[int]) -> list[tuple[int, str]]:
    """Comments on added lines (with the tokenizer, so a `#` inside a string is not one)."""
    out = []
    try:
        for tok in tokenize.generate_tokens(io.StringIO(syn.text).readline):
            if tok.type == tokenize.COMMENT:
                real = syn.real_line(tok.start[0])
                if real is not None and real in added:
                    out.append((real, tok.string.lstrip("#").strip()))
    except (tokenize.TokenError, SyntaxError):
        return [
            (n, text.strip().lstrip("#").strip())
            for n, text in zip(syn.real, syn.lines, strict=True)
            if n is not None and n in added and text.strip().startswith("#")
        ]
    return out
