"""Root cause vs symptom: where a candidate changes the code, against the reference or the group.

With a reference patch the target is the reference: which of its functions the candidate covers,
how much it changes elsewhere, how close its changed text is. Without one the target is the
group's consensus: functions that at least half of the *other* candidates change; a candidate
that changes a function the problem statement names (a traceback frame, a name in backticks, a
call) is not off target for being alone there. In both, one that fixes a helper the target
function calls or hands on (`self._fit_predict` passed as a callback) has not left that function
untouched: it fixed one call deeper, at or below the symptom. It is still off target (its lines
are not where the target's are), which alone does not reach T3.
"""

from __future__ import annotations

import ast
import math
import re
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field
from difflib import SequenceMatcher

from grading.diffs import FileDiff, Patch
from grading.grader.analysis.group import GroupContext
from grading.grader.analysis.inputs import Evidence, Side
from grading.grader.analysis.scopes import ScopeIndex, scopes_overlap
from grading.grader.analysis.views import Synthetic

Place = tuple[str, str]  # (path, scope)


@dataclass
class Footprint:
    """The core (non-test, non-junk) lines a patch changes, by place."""

    places: dict[Place, list[tuple[Side, int]]] = field(default_factory=dict)
    added: list[str] = field(default_factory=list)  # "path\tnormalised text", in diff order
    removed: list[str] = field(default_factory=list)

    @property
    def size(self) -> int:
        return len(self.added) + len(self.removed)


def _norm(text: str) -> str:
    return " ".join(text.split())


def footprint(ctx: GroupContext, patch: Patch) -> Footprint:
    """Core changes by place; lines only re-indented or re-commented do not count here (they are
    measured as `reformatted_lines`), so moving a block is not changing it."""
    fpr = Footprint()
    for fp in patch.files:
        if not ctx.is_core(fp):
            continue
        python = fp.path.endswith(".py")
        pre = ctx.pre_scopes(fp.old_path) if python and fp.old_path else None
        post = ScopeIndex(ctx.post(fp), _whole_tree(ctx.post_syn(fp))) if python else None
        same_removed, same_added = unchanged_pairs(fp)
        for n, text in sorted(fp.removed.items()):
            if n in same_removed or not code_of(text):
                continue
            scope = pre.scope(n) if pre is not None else "<file>"
            fpr.places.setdefault((fp.old_path or fp.path, scope), []).append(("pre", n))
            fpr.removed.append(f"{fp.path}\t{code_of(text)}")
        for n, text in sorted(fp.added.items()):
            if n in same_added or not code_of(text):
                continue
            scope = post.scope(n) if post is not None else "<file>"
            fpr.places.setdefault((fp.path, scope), []).append(("post", n))
            fpr.added.append(f"{fp.path}\t{code_of(text)}")
    return fpr


def _whole_tree(syn: Synthetic) -> ast.Module | None:
    """The synthetic's tree when it is the whole file unchanged (real lines = its lines)."""
    return syn.tree if syn.complete and not syn.dropped else None


def code_of(text: str) -> str:
    """The line's code, whitespace-normalised, without its comment ("" for blank or comment-only
    lines: comments are measured as noise, not as where the fix is)."""
    return _norm(_strip_comment(text))


def unchanged_pairs(fp: FileDiff) -> tuple[set[int], set[int]]:
    """Removed and added lines (old, new numbers) of a hunk that are the same line re-indented,
    re-wrapped with a trailing comma or given a trailing comment."""
    old_lines: set[int] = set()
    new_lines: set[int] = set()
    for hunk in fp.hunks:
        removed: dict[str, list[int]] = {}
        texts = set()
        for ln in hunk.lines:
            if ln.kind == "-" and ln.old_no is not None:
                removed.setdefault(shape(ln.content), []).append(ln.old_no)
                texts.add(ln.content)
        for ln in hunk.lines:
            if ln.kind != "+" or ln.new_no is None or ln.content in texts:
                continue
            key = shape(ln.content)
            if key and removed.get(key):
                old_lines.add(removed[key].pop(0))
                new_lines.add(ln.new_no)
    return old_lines, new_lines


def shape(text: str) -> str:
    return "".join(_strip_comment(text).split()).rstrip(",")


def _strip_comment(text: str) -> str:
    quote: str | None = None
    for i, ch in enumerate(text):
        if quote:
            if ch == quote and text[i - 1] != "\\":
                quote = None
        elif ch in "'\"":
            quote = ch
        elif ch == "#":
            return text[:i]
    return text


def _overlaps(a: Place, b: Place) -> bool:
    return a[0] == b[0] and scopes_overlap(a[1], b[1])


def similarity(mine: Footprint, target: Footprint) -> float:
    """How much of `mine`'s changed text the target also changes: each changed line scores its
    best match among the target's lines of the same side and file (difflib ratio), weighted by
    length. 1.0 = every line is the reference's; extra or different lines lower it."""
    total, score = 0, 0.0
    for lines, pool in ((mine.added, target.added), (mine.removed, target.removed)):
        by_path: dict[str, list[str]] = {}
        for entry in pool:
            path, _, text = entry.partition("\t")
            by_path.setdefault(path, []).append(text)
        for entry in lines:
            path, _, text = entry.partition("\t")
            weight = max(len(text), 1)
            total += weight
            score += weight * _best_ratio(text, by_path.get(path, []))
    return score / total if total else 1.0


def _best_ratio(text: str, pool: list[str]) -> float:
    if text in pool:
        return 1.0
    best = 0.0
    for other in pool:
        m = SequenceMatcher(None, text, other, autojunk=False)
        if m.real_quick_ratio() > best and m.quick_ratio() > best:
            best = max(best, m.ratio())
    return best


@dataclass(frozen=True)
class Uses:
    """What the base version of a function uses: names it calls (`f(…)`, `x.f(…)`), and
    attributes of `self`/`cls` it names without calling them (a bound method handed on as a
    callback, `groupby.apply(data, self._fit_predict)`)."""

    calls: frozenset[str] = frozenset()
    handed_on: frozenset[str] = frozenset()

    def covers(self, target: Place, mine: dict[Place, list[tuple[Side, int]]]) -> bool:
        """Whether a candidate changing `mine` changed a function the target uses: any function
        it calls (the callee may be imported), or a method of its own class it hands on (same
        file and class; a class a partial view cannot name is not known to differ)."""
        return any(
            _leaf(scope) in self.calls
            or (path == target[0] and _leaf(scope) in self.handed_on
                and _same_class(scope, target[1]))
            for path, scope in mine
        )  # fmt: skip


def _same_class(a: str, b: str) -> bool:
    pa, pb = a.rpartition(".")[0], b.rpartition(".")[0]
    return pa == pb or pa.startswith("@") or pb.startswith("@")


def callees(ctx: GroupContext, place: Place) -> Uses:
    """The `Uses` of a changed function: from the AST where the file is whole; on a partial
    view, from the visible base lines in that scope (the reference's and the candidates' hunks
    show the lines around each change), strings and its own `def` line left out. Nothing where
    nothing is known."""
    path, scope = place
    if not path.endswith(".py"):
        return Uses()
    syn = ctx.base_syn(path)
    tree = _whole_tree(syn) if syn is not None else None
    if tree is not None:
        return ctx.cached(("callees", place), lambda: _uses_in(tree, scope))
    view, scopes = ctx.base(path), ctx.pre_scopes(path)
    if view is None or scopes is None:
        return Uses()
    # Asked once per candidate and target: the scan of the view's scopes runs once per target.
    return ctx.cached(
        ("callees", place),
        lambda: _uses_on([view.lines[n] for n in sorted(view.lines) if scopes.scope(n) == scope]),
    )


# On a line: a def/class header's own name, string literals (a name in a message is no use of
# it), calls `name(` / `.name(`, and `self.name` / `cls.name` not called.
_HEADER = re.compile(r"^\s*(?:async\s+)?(?:def|class)\s+\w+")
_STRING = re.compile(r"""[rRbBuUfF]{0,2}(?:'(?:\\.|[^'\\])*'|"(?:\\.|[^"\\])*")""")
_CALL = re.compile(r"\b([A-Za-z_]\w*)\s*\(")
_HANDED_ON = re.compile(r"\b(?:self|cls)\.([A-Za-z_]\w*)\b(?!\s*\()")


def _uses_on(lines: list[str]) -> Uses:
    calls: set[str] = set()
    handed_on: set[str] = set()
    for text in lines:
        code = _STRING.sub("''", _HEADER.sub("", _strip_comment(text)))
        calls.update(_CALL.findall(code))
        handed_on.update(_HANDED_ON.findall(code))
    return Uses(frozenset(calls), frozenset(handed_on - calls))


def _uses_in(tree: ast.Module, qualname: str) -> Uses:
    parts = qualname.split(".")
    nodes: list[ast.AST] = [tree]
    for part in parts:
        nodes = [n for node in nodes for n in ast.iter_child_nodes(node)
                 if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
                 and n.name == part]  # fmt: skip
    calls: set[str] = set()
    named: set[str] = set()
    for node in nodes:
        for sub in ast.walk(node):
            if isinstance(sub, ast.Call):
                func = sub.func
                if isinstance(func, ast.Name):
                    calls.add(func.id)
                elif isinstance(func, ast.Attribute):
                    calls.add(func.attr)
            elif (
                isinstance(sub, ast.Attribute)
                and isinstance(sub.value, ast.Name)
                and sub.value.id in ("self", "cls")
            ):
                named.add(sub.attr)
    return Uses(frozenset(calls), frozenset(named - calls))


def _in_frame(ctx: GroupContext, place: Place) -> bool:
    """Whether an anonymous region (a partial view no visible line names) shows a line the
    problem statement's traceback quotes from the same file: then the change is in that frame's
    function. A named scope is judged by its name alone."""
    path, scope = place
    if _leaf(scope) or not ctx.problem_frame_lines:
        return False
    view, scopes = ctx.base(path), ctx.pre_scopes(path)
    if view is None or scopes is None:
        return False
    name = path.rsplit("/", 1)[-1]
    quoted = {code for file, code in ctx.problem_frame_lines if file == name}
    if not quoted:
        return False

    def shown() -> bool:
        return any(code_of(view.lines[n]) in quoted for n in view.lines
                   if scopes.scope(n) == scope)  # fmt: skip

    return ctx.cached(("in_frame", place), shown)


def _leaf(scope: str) -> str:
    parts = [p for p in scope.split(".") if not p.startswith("@")]
    return parts[-1] if parts else ""


def locality(
    ctx: GroupContext,
    key: str,
    mine: Footprint,
    others: Sequence[Footprint],
    reference: Footprint | None,
    ev: Evidence,
) -> dict[str, float]:
    """off_target, target_uncovered, reference_distance and excess_lines of one candidate."""
    if reference is not None:
        targets = list(reference.places)
        endorsed: set[Place] = set()
        distance = 1.0 - similarity(mine, reference)
        baseline = reference.size
    elif others:
        need = math.ceil(len(others) / 2)
        pool = {p for o in others for p in o.places}
        targets = [p for p in pool if sum(any(_overlaps(p, q) for q in o.places)
                                         for o in others) >= need]  # fmt: skip
        names = ctx.problem_names
        endorsed = {p for p in mine.places if _leaf(p[1]) in names or _in_frame(ctx, p)}
        distance = 1.0 - statistics.fmean(similarity(mine, o) for o in others)
        baseline = int(statistics.median(o.size for o in others))
    else:
        return dict.fromkeys(("off_target", "target_uncovered", "reference_distance",
                              "excess_lines"), 0.0)  # fmt: skip

    off = [
        p for p in mine.places if p not in endorsed and not any(_overlaps(p, t) for t in targets)
    ]
    off_lines = sum(len(mine.places[p]) for p in off)
    uncovered = [t for t in targets if not any(_overlaps(p, t) for p in mine.places)]
    if uncovered:
        # A fix in a helper the target function calls is below the symptom, not beside it (the
        # group: the root cause the others patch around; the reference: the same fix one call
        # deeper). Known only where the function's body is visible.
        uncovered = [t for t in uncovered if not callees(ctx, t).covers(t, mine.places)]
    values = {
        "off_target": off_lines / mine.size if mine.size else 0.0,
        "target_uncovered": 0.0 if endorsed or not targets else len(uncovered) / len(targets),
        "reference_distance": max(0.0, distance),
        "excess_lines": math.log1p(max(0, mine.size - baseline)),
    }
    for place in off:
        _cite(ev, "off_target", place, mine.places[place], f"changes {place[1]} in {place[0]}")
    if values["target_uncovered"] or values["reference_distance"] or values["excess_lines"]:
        for place, lines in list(mine.places.items())[:3]:
            for name in ("target_uncovered", "reference_distance", "excess_lines"):
                if values[name]:
                    _cite(ev, name, place, lines)
    if uncovered:
        ev.details.setdefault("target_uncovered", []).append(
            "leaves untouched: " + ", ".join(f"{s} in {p}" for p, s in uncovered[:5])
        )
    return values


def _cite(
    ev: Evidence, feature: str, place: Place, lines: list[tuple[Side, int]], note: str = ""
) -> None:
    post = [n for side, n in lines if side == "post"]
    pre = [n for side, n in lines if side == "pre"]
    if post:
        ev.cite(feature, place[0], post, "post", note)
    elif pre:
        ev.cite(feature, place[0], pre, "pre", note)
