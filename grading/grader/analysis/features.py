"""Measure every feature of the catalogue for every candidate of a group."""

from __future__ import annotations

import ast
import math
import re
import warnings
from collections import Counter
from collections.abc import Iterable
from functools import partial

from grading.diffs import FileDiff, Patch
from grading.grader.analysis import analysers, pyfacts
from grading.grader.analysis.catalogue import NAMES
from grading.grader.analysis.group import GroupContext
from grading.grader.analysis.inputs import Evidence, Observation
from grading.grader.analysis.locality import Footprint, footprint, locality, unchanged_pairs
from grading.grader.analysis.views import Synthetic, synthesize

# Words that describe the edit rather than the code ("Changed to ...", "Now includes ...").
_NARRATING = re.compile(
    r"\b(chang(e|ed|ing)|adjust(ed|ing)?|modif(y|ied)|updat(e|ed)|fix(ed|es)?|add(ed)?|"
    r"remov(e|ed)|now|instead|ensure[sd]?|correct(ly|ed)?|new(ly)?|no longer|previously|"
    r"patch(ed)?|handle[sd]?)\b",
    re.IGNORECASE,
)
_PLACEHOLDER = re.compile(
    r"\b(placeholder|hypothetical|lorem ipsum|todo|fixme|xxx|tbd|not implemented|"
    r"implement (this|me)|dummy)\b",
    re.IGNORECASE,
)
# The same in user-facing text (help strings, messages, docstrings): changelog wording that
# describes this edit ("... Now includes the module name.") rather than what the code does.
_NARRATING_TEXT = re.compile(
    r"\b(now|no longer|any ?more|previously|(has|have|was|were) (been )?(changed|fixed|updated)|"
    r"changed to|updated to|fixed to)\b",
    re.IGNORECASE,
)
_SKIP_NAMES = {"skip", "skipif", "xfail", "skipTest", "skipIf", "skipUnless", "expectedFailure"}


def extract(ctx: GroupContext) -> dict[str, dict[str, Observation]]:
    """key -> feature name -> observation, for every candidate of the group."""
    prints = {key: footprint(ctx, patch) for key, patch in ctx.patches.items()}
    ref = footprint(ctx, ctx.reference) if ctx.reference is not None else None
    out = {}
    for key, patch in ctx.patches.items():
        others = [fp for k, fp in prints.items() if k != key]
        out[key] = _candidate(ctx, key, patch, prints[key], others, ref)
    return out


def _candidate(
    ctx: GroupContext,
    key: str,
    patch: Patch,
    mine: Footprint,
    others: list[Footprint],
    ref: Footprint | None,
) -> dict[str, Observation]:
    ev = Evidence(key)
    counts: Counter[str] = Counter()
    values = locality(ctx, key, mine, others, ref, ev)
    post_files: list[tuple[str, Synthetic, Synthetic]] = []  # (path, whole, near the changes)
    pre_files: list[tuple[str, Synthetic]] = []
    for fp in patch.files:
        if fp.is_binary:
            continue
        if ctx.is_junk(fp):
            counts["junk_files"] += 1
            lines = sorted(fp.added) or sorted(fp.removed)
            ev.cite("junk_files", fp.path, lines, "post" if fp.added else "pre", f"adds {fp.path}")
            continue
        if ctx.is_test(fp.path):
            _tests(ctx, fp, counts, ev)
            continue
        if fp.path.endswith(".py") and not fp.is_deleted:
            pre, post, near = _python_file(ctx, fp, counts, ev)
            post_files.append((fp.path, post, near))
            if pre is not None and fp.old_path:
                pre_files.append((fp.old_path, pre))
        _reformatting(fp, counts, ev)
    _dead_code(ctx, patch, pre_files, post_files, counts, ev)
    for name, count in counts.items():
        values[name] = math.log1p(count)
    return {
        name: Observation(
            name,
            round(values.get(name, 0.0), 6),
            tuple(ev.refs.get(name, ())),
            tuple(ev.details.get(name, ())),
        )
        for name in NAMES
    }


def _python_file(
    ctx: GroupContext, fp: FileDiff, counts: Counter[str], ev: Evidence
) -> tuple[Synthetic | None, Synthetic, Synthetic]:
    path = fp.path
    added = set(fp.added)
    _, touched = unchanged_pairs(fp)  # old lines re-indented: not new code
    pre = ctx.base_syn(fp.old_path) if fp.old_path else None
    post = ctx.post_syn(fp)
    near = ctx.post_near(fp)
    pre_or_empty = pre if pre is not None else Synthetic([], [], None, True)
    limit = ctx.line_limit(fp.old_path or path) or 10**6

    def new(
        found_post: Iterable[analysers.Finding], found_pre: Iterable[analysers.Finding]
    ) -> list[analysers.Finding]:
        return analysers.new_findings(found_post, found_pre, added)

    flakes_pre = pre_or_empty.cached(
        ("pyflakes", path), lambda: analysers.pyflakes_findings(pre_or_empty, path)
    )
    for f in new(analysers.pyflakes_findings(post, path), flakes_pre):
        counts["lint_new"] += 1
        ev.cite("lint_new", path, [f.line], "post", f"pyflakes: {f.message}")
    style_pre = pre_or_empty.cached(
        ("style", limit), lambda: analysers.style_findings(pre_or_empty, limit)
    )
    for f in new(analysers.style_findings(near, limit), style_pre):
        name = {"E501": "long_lines", "W291": "whitespace_lines", "W293": "whitespace_lines",
                "W191": "indentation"}.get(f.code, "indentation")  # fmt: skip
        counts[name] += 1
        ev.cite(name, path, [f.line], "post", f"{f.code} {f.message}")
    if ctx.min_python is not None and post.complete and post.tree is not None:
        _syntax_for(ctx.min_python, post, path, counts, ev)

    facts = [
        ("debug_output", pyfacts.debug_calls(post, added), "debug output"),
        ("local_imports", pyfacts.local_imports(post, added), "import inside a function"),
        (
            "exception_handlers",
            pyfacts.except_handlers(post, added, added - touched),
            "new except clause around existing code, or catching everything",
        ),
    ]
    if pre is not None and pre.cached("prints", lambda: pyfacts.debug_calls(pre, _every(pre))):
        facts = facts[1:]  # the module already prints: printing is its job
    for name, lines, note in facts:
        counts[name] += len(lines)
        ev.cite(name, path, lines, "post", note if lines else "")
    before = pre_or_empty.cached("fallbacks", lambda: {
        text for _, text in pyfacts.fallbacks(pre_or_empty, _every(pre_or_empty))
    })  # fmt: skip
    for line, text in pyfacts.fallbacks(post, added):
        if text not in before:
            counts["fallback_default"] += 1
            ev.cite("fallback_default", path, [line], "post", f"falls back: {text}")
    # A literal the file already had, or a name of its own code (a parameter compared by name),
    # is the code's vocabulary, not a value taken from the tests.
    known = pre_or_empty.cached("known", lambda: pyfacts.all_literals(pre_or_empty) | {
        f"s:{n}" for n in pyfacts.identifiers(pre_or_empty)
    })  # fmt: skip
    for line, lit in pyfacts.special_cases(post, added, ctx.test_literals - known):
        counts["special_casing"] += 1
        ev.cite("special_casing", path, [line], "post", f"special-cases {lit[2:]!r} from the tests")
    _surface(fp, pre_or_empty, post, counts, ev)
    _words(near, added, path, " ".join(fp.removed.values()), counts, ev)
    return pre, post, near


def _every(syn: Synthetic) -> set[int]:
    return {n for n in syn.real if n is not None}


def _syntax_for(
    version: tuple[int, int], post: Synthetic, path: str, counts: Counter[str], ev: Evidence
) -> None:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ast.parse(post.text, feature_version=version)
    except SyntaxError as exc:
        line = post.real_line(exc.lineno or 0)
        if line is not None:
            counts["syntax_unsupported"] += 1
            ev.cite("syntax_unsupported", path, [line], "post",
                    f"Python {version[0]}.{version[1]} cannot parse it: {exc.msg}")  # fmt: skip


def _surface(
    fp: FileDiff, pre: Synthetic, post: Synthetic, counts: Counter[str], ev: Evidence
) -> None:
    removed, added = set(fp.removed), set(fp.added)
    old_defs, new_defs = pyfacts.defs(pre, removed), pyfacts.defs(post, added)
    all_new = pyfacts.defs(post, {n for n in post.real if n})
    for name, (line, params) in old_defs.items():
        if name.startswith("_") and not (name.startswith("__") and name.endswith("__")):
            continue
        if name in new_defs and new_defs[name][1] != params:
            counts["signature_changed"] += 1
            ev.cite(
                "signature_changed",
                fp.path,
                [new_defs[name][0]],
                "post",
                f"changes the signature of {name}()",
            )
        elif name not in all_new:
            counts["signature_changed"] += 1
            ev.cite("signature_changed", fp.old_path or fp.path, [line], "pre", f"removes {name}()")
    still_called = pyfacts.self_calls(post, {n for n in post.real if n})
    for name, line in pyfacts.self_calls(pre, removed).items():
        if name not in still_called:
            counts["hook_call_removed"] += 1
            ev.cite(
                "hook_call_removed",
                fp.old_path or fp.path,
                [line],
                "pre",
                f"no longer calls self.{name}()",
            )


def _words(
    post: Synthetic, added: set[int], path: str, removed: str, counts: Counter[str], ev: Evidence
) -> None:
    for line, text in pyfacts.comments(post, added):
        counts["comments_added"] += 1
        ev.cite("comments_added", path, [line], "post")
        if _NARRATING.search(text):
            counts["narrating_comments"] += 1
            ev.cite("narrating_comments", path, [line], "post", f"# {text[:80]}")
        if _PLACEHOLDER.search(text):
            counts["placeholder_text"] += 1
            ev.cite("placeholder_text", path, [line], "post", f"# {text[:80]}")
    for line, text in pyfacts.string_constants(post, added):
        said = _NARRATING_TEXT.search(text)
        # Only wording the removed lines did not have: an old "no longer" message is not new.
        if said and not re.search(rf"\b{re.escape(said.group(0))}\b", removed, re.IGNORECASE):
            counts["narrating_comments"] += 1
            note = f"narrates the change: {text[:80]!r}"
            ev.cite("narrating_comments", path, [line], "post", note)
        if _PLACEHOLDER.search(text):
            counts["placeholder_text"] += 1
            ev.cite("placeholder_text", path, [line], "post", repr(text[:80]))


def _tests(ctx: GroupContext, fp: FileDiff, counts: Counter[str], ev: Evidence) -> None:
    if fp.is_new:
        return  # new tests are welcome
    changed = [n for n, t in fp.removed.items() if t.strip()]
    if changed:
        counts["tests_modified"] += len(changed)
        ev.cite(
            "tests_modified", fp.old_path or fp.path, changed, "pre", "edits existing test lines"
        )
    if not fp.path.endswith(".py"):
        return
    pre = ctx.base_syn(fp.old_path or fp.path) or Synthetic([], [], None, True)
    post = synthesize(ctx.post(fp))
    skips = [line for line, name in _names(post, set(fp.added)) if name in _SKIP_NAMES]
    lost = _assertions(pre, set(fp.removed)) - _assertions(post, set(fp.added))
    if skips or lost > 0:
        counts["tests_weakened"] += len(skips) + max(lost, 0)
        ev.cite("tests_weakened", fp.path, skips, "post", "skips or xfails tests")
        if lost > 0:
            ev.cite("tests_weakened", fp.old_path or fp.path, sorted(fp.removed), "pre",
                    f"removes {lost} assertion(s)")  # fmt: skip


def _names(syn: Synthetic, lines: set[int]) -> list[tuple[int, str]]:
    out = []
    for line, node, _ in pyfacts._nodes(syn, lines):
        if isinstance(node, ast.Attribute):
            out.append((line, node.attr))
        elif isinstance(node, ast.Name):
            out.append((line, node.id))
    return out


def _assertions(syn: Synthetic, lines: set[int]) -> int:
    n = 0
    for _, node, _ in pyfacts._nodes(syn, lines):
        if isinstance(node, ast.Assert):
            n += 1
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            n += node.func.attr.startswith("assert") or node.func.attr == "raises"
    return n


def _reformatting(fp: FileDiff, counts: Counter[str], ev: Evidence) -> None:
    """Added lines that equal a removed line of the same hunk once whitespace, a trailing comma
    and a trailing comment are ignored: the candidate touched a line without changing it."""
    _, touched = unchanged_pairs(fp)
    touched -= moved_into_new_block(fp, touched)
    if touched:
        counts["reformatted_lines"] += len(touched)
        ev.cite(
            "reformatted_lines",
            fp.path,
            sorted(touched),
            "post",
            "touches lines without changing them",
        )


def _indent(text: str) -> int:
    return len(text) - len(text.lstrip())


def moved_into_new_block(fp: FileDiff, touched: set[int]) -> set[int]:
    """Touched lines (new numbers) that are re-indented because the patch wraps them in a new
    block (`if ...:` / `else:` added above them) or removes the block they were in: the
    re-indentation is the change's structure, not reformatting."""
    out: set[int] = set()
    for hunk in fp.hunks:
        post = [ln for ln in hunk.lines if ln.kind in "+ "]
        pre = [ln for ln in hunk.lines if ln.kind in "- "]
        for i, ln in enumerate(post):
            if ln.kind != "+" or ln.new_no not in touched:
                continue
            # The line's new parent: the nearest line above it (post side) indented less.
            parent = next((p for p in reversed(post[:i]) if p.content.strip()
                           and _indent(p.content) < _indent(ln.content)), None)  # fmt: skip
            if parent is not None and parent.kind == "+" and parent.content.rstrip().endswith(":"):
                out.add(ln.new_no)
        for i, ln in enumerate(pre):
            if ln.kind != "-":
                continue
            parent = next((p for p in reversed(pre[:i]) if p.content.strip()
                           and _indent(p.content) < _indent(ln.content)), None)  # fmt: skip
            if parent is None or parent.kind != "-" or not parent.content.rstrip().endswith(":"):
                continue
            # The old block's opener is gone: its lines re-indented after it are structural.
            out |= {p.new_no for p in post if p.kind == "+" and p.new_no in touched
                    and p.content.strip() == ln.content.strip()}  # fmt: skip
    return out


def _dead_code(
    ctx: GroupContext,
    patch: Patch,
    pre_files: list[tuple[str, Synthetic]],
    post_files: list[tuple[str, Synthetic, Synthetic]],
    counts: Counter[str],
    ev: Evidence,
) -> None:
    """New unreachable code, and definitions that were used before the patch and are not after
    it (the old copy left in place beside its replacement)."""
    if not post_files:
        return
    pre = ctx.cached(("vulture", tuple(p for p, _ in pre_files)),
                     lambda: analysers.vulture_findings(pre_files))  # fmt: skip
    post = analysers.vulture_findings([(path, near) for path, _, near in post_files])
    by_path = {fp.path: fp for fp in patch.files}
    for path, findings in post.items():
        fp = by_path[path]
        before = pre.get(fp.old_path or "", [])
        for f in analysers.new_findings(findings, before, fp.added):
            if f.code == "unreachable_code":
                counts["dead_code"] += 1
                ev.cite("dead_code", path, [f.line], "post", f.message)
    for path, post_syn, _ in post_files:
        fp = by_path[path]
        pre_syn = next((s for p, s in pre_files if p == fp.old_path), None)
        if pre_syn is None:
            continue
        was_unused, existed = pre_syn.cached("local_defs", partial(_local_defs, pre_syn))
        # A nested def can only lose its last use in a function the patch changes.
        changed = {n for h in fp.hunks for n in range(h.new_start, h.new_start + h.new_len + 1)}
        for name, line in pyfacts.unused_local_defs(post_syn, changed).items():
            if name in existed and name not in was_unused:
                counts["dead_code"] += 1
                cited = (
                    [line] if line in fp.added or line in fp.context_post else sorted(fp.added)[:1]
                )
                ev.cite(
                    "dead_code", path, cited, "post", f"{name} is left in place but no longer used"
                )


def _local_defs(syn: Synthetic) -> tuple[dict[str, int], set[str]]:
    """Unused nested defs and every nested def (`outer.inner`) of a base file."""
    return pyfacts.unused_local_defs(syn), {f"{o}.{i}" for o, i in _nested_defs(syn)}


def _nested_defs(syn: Synthetic) -> list[tuple[str, str]]:
    if syn.tree is None:
        return []
    return [
        (outer.name, fn.name)
        for outer in ast.walk(syn.tree)
        if isinstance(outer, ast.FunctionDef | ast.AsyncFunctionDef)
        for fn in outer.body
        if isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef)
    ]
