"""Pre- and post-patch views of a changed file, whole (from source) or partial (from the diffs).

Without a repository the base file is known only where some diff shows it. All diffs of a group
start from the same base commit, so their removed and context lines are pooled into one partial
base view (the reference patch and every candidate each reveal a little more of the file). A
candidate's post view is that base view with the candidate's hunks applied, line numbers shifted
as `git apply` would shift them.

`synthesize` turns a partial view into Python that parses: it keeps every known line, inserts
`if 1:` / `pass` lines where a gap cut a block open, and drops the head of a fragment that starts
inside a string or a bracket. `Synthetic.real` maps each synthetic line back to the real line
number, so analyser findings are reported on real lines and inserted lines never produce one.
"""

from __future__ import annotations

import ast
import re
import warnings
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, TypeVar, cast

from grading.diffs import FileDiff

T = TypeVar("T")

# Reads a file at the base commit; None when the file does not exist there.
Reader = Callable[[str], str | None]

_MAX_REPAIRS = 200


@dataclass(frozen=True)
class FileView:
    lines: dict[int, str]  # real line number (1-based) -> text
    complete: bool  # the whole file is known (source, or a file the patch creates)
    # For a post view: post line -> base line, for every line the patch did not add.
    origin: dict[int, int] = field(default_factory=dict)

    def max_line(self) -> int:
        return max(self.lines, default=0)


def _indent(text: str) -> int:
    return len(text.expandtabs(8)) - len(text.expandtabs(8).lstrip())


def base_view(path: str, patches: Iterable[FileDiff], read: Reader | None) -> FileView | None:
    """The file at the base commit: whole from `read`, else pooled from the patches' hunks."""
    if read is not None:
        text = read(path)
        if text is not None:
            return FileView({i: ln for i, ln in enumerate(text.splitlines(), 1)}, True)
    lines: dict[int, str] = {}
    for fp in patches:
        if fp.old_path != path:
            continue
        for h in fp.hunks:
            for ln in h.lines:
                if ln.kind != "+" and ln.old_no is not None:
                    lines.setdefault(ln.old_no, ln.content)
    return FileView(lines, False) if lines else None


# Kept whole (C901): one walk over the hunks with its cursor; split, the parts would share
# every local.
def post_view(base: FileView | None, fp: FileDiff) -> FileView:  # noqa: C901
    """The candidate's file after its patch (whole when the base is whole or the file is new)."""
    if fp.is_new or base is None:
        own = {
            ln.new_no: ln.content
            for h in fp.hunks
            for ln in h.lines
            if ln.kind != "-" and ln.new_no
        }
        return FileView(own, fp.is_new)
    if base.complete:
        applied = _apply(base, fp)
        if applied is not None:
            return applied
    hunks = sorted(fp.hunks, key=lambda h: h.old_start)
    lines: dict[int, str] = {}
    origin: dict[int, int] = {}
    for n, text in base.lines.items():
        delta, inside = 0, False
        for h in hunks:
            end = h.old_start + h.old_len - 1 if h.old_len else h.old_start
            if h.old_len and h.old_start <= n <= end:
                inside = True
                break
            if n > end:
                delta += h.new_len - h.old_len
        if not inside:
            lines[n + delta] = text
            origin[n + delta] = n
    for h in hunks:
        for ln in h.lines:
            if ln.kind != "-" and ln.new_no is not None:
                lines[ln.new_no] = ln.content
                if ln.old_no is not None:
                    origin[ln.new_no] = ln.old_no
    return FileView(lines, False, origin)


def _apply(base: FileView, fp: FileDiff) -> FileView | None:
    """Apply the hunks to a whole file; None if a context or removed line does not match."""
    out: list[tuple[str, int | None]] = []
    cursor = 1
    for h in sorted(fp.hunks, key=lambda h: h.old_start):
        start = h.old_start if h.old_len else h.old_start + 1
        if start < cursor:
            return None
        out += [(base.lines[n], n) for n in range(cursor, start)]
        cursor = start
        for ln in h.lines:
            if ln.kind == "+":
                out.append((ln.content, None))
                continue
            if base.lines.get(cursor) != ln.content:
                return None
            if ln.kind == " ":
                out.append((ln.content, cursor))
            cursor += 1
    out += [(base.lines[n], n) for n in range(cursor, base.max_line() + 1)]
    lines = {i: text for i, (text, _) in enumerate(out, 1)}
    origin = {i: n for i, (_, n) in enumerate(out, 1) if n is not None}
    return FileView(lines, True, origin)


@dataclass
class Synthetic:
    """Parseable Python built from a view; `real[i]` is the real line of synthetic line i + 1."""

    lines: list[str]
    real: list[int | None]
    tree: ast.Module | None
    complete: bool
    dropped: set[int] = field(default_factory=set)  # real lines the repair had to leave out
    # Results computed once per source (the base file is shared by every candidate of a group).
    memo: dict[object, Any] = field(default_factory=dict, repr=False, compare=False)

    def cached(self, key: object, compute: Callable[[], T]) -> T:
        if key not in self.memo:
            self.memo[key] = compute()
        return cast(T, self.memo[key])

    @property
    def text(self) -> str:
        return "\n".join(self.lines) + "\n"

    def real_line(self, synthetic_line: int) -> int | None:
        if 1 <= synthetic_line <= len(self.real):
            return self.real[synthetic_line - 1]
        return None


def _parse(text: str) -> ast.Module:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # invalid escape sequences in old code are not ours
        return ast.parse(text)


def synthesize(view: FileView) -> Synthetic:
    """A parseable version of the view; `tree` is None if even the repairs could not get one."""
    numbers = sorted(view.lines)
    lines = [view.lines[n] for n in numbers]
    real: list[int | None] = list(numbers)
    segment = _segments(numbers)
    syn = Synthetic(lines, real, None, view.complete)
    for _ in range(_MAX_REPAIRS):
        try:
            syn.tree = _parse(syn.text)
            return syn
        except SyntaxError as exc:
            if view.complete or not _repair(syn, segment, exc):
                return syn
    return syn


def _segments(numbers: list[int]) -> list[int]:
    seg, out, prev = 0, [], None
    for n in numbers:
        if prev is not None and n != prev + 1:
            seg += 1
        out.append(seg)
        prev = n
    return out


def _repair(syn: Synthetic, segment: list[int], exc: SyntaxError) -> bool:
    """Change `syn` so this error goes away; False if there is nothing left to try."""
    if not syn.lines:
        return False
    i = min(max((exc.lineno or 1) - 1, 0), len(syn.lines))
    msg = exc.msg or ""
    if msg.startswith("expected an indented block"):
        # "... after 'if' statement on line N": the block opener is line N, its body is missing.
        match = re.search(r"on line (\d+)", msg)
        opener = int(match.group(1)) - 1 if match else _previous_code(syn.lines, i)
        if opener is None or not 0 <= opener < len(syn.lines):
            return False
        _insert(syn, segment, opener + 1, " " * (_indent(syn.lines[opener]) + 4) + "pass")
        return True
    i = min(i, len(syn.lines) - 1)
    if msg.startswith(("unexpected indent", "unindent does not match")):
        here = _indent(syn.lines[i])
        outer = next((j for j in range(i - 1, -1, -1) if _is_code(syn.lines[j])
                      and _indent(syn.lines[j]) < here), None)  # fmt: skip
        level = _indent(syn.lines[outer]) if outer is not None else 0
        if level < here:
            _insert(syn, segment, i, " " * level + "if 1:")
            return True
    # Anything else: the fragment starts inside a string, a bracket or a statement we cannot
    # see, or the previous fragment ends inside one. Drop the smallest piece that explains it.
    seg = segment[i]
    first = segment.index(seg)
    last = len(segment) - 1 - segment[::-1].index(seg)
    opened = "never closed" in msg or "unexpected EOF" in msg or "unterminated" in msg
    closing = _docstring_tail(syn, first, i)
    if opened and i > first and not any(_is_prose(ln) for ln in syn.lines[first:i]):
        drop = range(i, last + 1)  # an opening whose closing lies in the gap after it
    elif closing is not None:
        # The fragment starts inside a docstring: its closing quotes would open a string that
        # swallows the code after them (the error is reported where that string ends).
        drop = range(first, closing + 1)
    elif first > 0 and _opens_fragment(syn.lines, first, i):
        drop = range(first - 1, first)  # the previous fragment left a bracket or string open
    else:
        drop = range(first, i + 1)
    for j in reversed(drop):
        n = syn.real.pop(j)
        syn.lines.pop(j)
        segment.pop(j)
        if n is not None:
            syn.dropped.add(n)
    return True


_PROSE = re.compile(r"[A-Za-z]+ [A-Za-z]+ [A-Za-z]+")
_TRIPLE = re.compile(r'"""|\'\'\'')


def _docstring_tail(syn: Synthetic, first: int, i: int) -> int | None:
    """The line (before i) that closes a docstring the fragment starting at `first` begins
    inside: the first line with an odd number of triple quotes, after lines that are blank,
    prose or no statement of their own ("form."); lines the repairs inserted are skipped."""
    lines = syn.lines
    for j in range(first, i):
        if syn.real[j] is None:
            continue
        quotes = len(_TRIPLE.findall(lines[j]))
        if quotes % 2:
            return j
        if quotes or (_starts_statement(lines[j]) and not _is_prose(lines[j])):
            return None
    return None


def _is_prose(text: str) -> bool:
    """Docstring text (so a quote after it closes a string that opened in the gap)."""
    return bool(_PROSE.search(text)) and not _starts_statement(text)


def _opens_fragment(lines: list[str], first: int, i: int) -> bool:
    """Line i begins a statement and only blanks, comments or decorators precede it."""
    head = (ln.strip() for ln in lines[first:i])
    return all(not h or h.startswith(("#", "@")) for h in head) and _starts_statement(lines[i])


def _starts_statement(text: str) -> bool:
    body = text.strip()
    if not body:
        return False
    try:
        if body.startswith("@"):
            body += "\ndef _(): pass"
        _parse(body + ("\n    pass" if body.endswith(":") else ""))
    except SyntaxError:
        return False
    return True


def _is_code(text: str) -> bool:
    stripped = text.strip()
    return bool(stripped) and not stripped.startswith("#")


def _previous_code(lines: list[str], i: int) -> int | None:
    return next((j for j in range(i - 1, -1, -1) if _is_code(lines[j])), None)


def _insert(syn: Synthetic, segment: list[int], i: int, text: str) -> None:
    syn.lines.insert(i, text)
    syn.real.insert(i, None)
    segment.insert(i, segment[i] if i < len(segment) else (segment[-1] if segment else 0))
