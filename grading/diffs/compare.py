"""What one candidate's post-patch files do that another's do not.

Both candidates patch the same base, so their changes can be matched in the base's coordinates
without the base itself: a removed line is the base line it removes (its old line number), and an
added line is its text plus the base line it is inserted before (the "anchor"), counted when the
same text is added twice at one anchor; content is compared without a CRLF's carriage return.
A change both candidates make is shared; the rest is unique to one side. Consecutive changed
lines with the same status form one `Block`, so the result reads like a small diff: "only A
removes base line 40 and adds ... before 41".

Files are matched by their post-patch path (`FileDiff.path`), as the reviewer's page shows them;
a rename to different names is two files.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Literal

from grading.diffs.model import FileDiff, LineKind, Patch

Status = Literal["shared", "only_a", "only_b"]
# (kind, base line, content, occurrence): a removal's content comes from the base, so it only
# differs between candidates whose patches disagree about the base (then they are not shared).
_Key = tuple[str, int, str, int]


@dataclass(frozen=True, slots=True)
class ChangedLine:
    kind: LineKind  # "-" or "+"
    content: str
    base_line: int  # the removed base line, or the base line an added line is inserted before
    new_no: int | None  # the line's number in this candidate's post-patch file (added lines)


@dataclass(frozen=True, slots=True)
class Block:
    """A run of consecutive changed lines of one candidate's file with one status."""

    status: Status
    lines: tuple[ChangedLine, ...]

    @property
    def base_start(self) -> int:
        return self.lines[0].base_line

    @property
    def post_lines(self) -> tuple[int, int] | None:
        """First and last post-patch line numbers of the block's added lines."""
        numbers = [ln.new_no for ln in self.lines if ln.new_no is not None]
        return (numbers[0], numbers[-1]) if numbers else None


@dataclass(frozen=True, slots=True)
class FileComparison:
    path: str
    a: FileDiff | None  # None: candidate A does not touch the file
    b: FileDiff | None
    only_a: tuple[Block, ...]  # in A's line order
    only_b: tuple[Block, ...]  # in B's line order
    shared: tuple[Block, ...]  # in A's line order
    # Binary files have no lines: they compare equal only when their diff text is the same.
    binary_same: bool | None = None

    @property
    def identical(self) -> bool:
        """Both candidates leave this file in the same state."""
        if self.binary_same is not None:
            return self.binary_same
        return self.a is not None and self.b is not None and not self.only_a and not self.only_b

    def count(self, status: Status) -> int:
        """Changed lines with that status."""
        blocks = {"shared": self.shared, "only_a": self.only_a, "only_b": self.only_b}[status]
        return sum(len(b.lines) for b in blocks)


def changed_lines(file: FileDiff) -> Iterator[ChangedLine]:
    """Every removed and added line of a file, placed in the base's coordinates."""
    for hunk in file.hunks:
        anchor = hunk.first_old
        for ln in hunk.lines:
            if ln.kind == "-":
                assert ln.old_no is not None
                yield ChangedLine("-", ln.content, ln.old_no, None)
                anchor = ln.old_no + 1
            elif ln.kind == "+":
                yield ChangedLine("+", ln.content, anchor, ln.new_no)
            else:
                anchor = (ln.old_no or anchor) + 1


def _keyed(file: FileDiff | None) -> list[tuple[_Key, ChangedLine]]:
    if file is None:
        return []
    seen: Counter[tuple[str, int, str]] = Counter()
    out: list[tuple[_Key, ChangedLine]] = []
    for ln in changed_lines(file):
        seen[(ln.kind, ln.base_line, ln.content)] += 1
        out.append(
            ((ln.kind, ln.base_line, ln.content, seen[(ln.kind, ln.base_line, ln.content)]), ln)
        )
    return out


def _blocks(lines: list[tuple[Status, ChangedLine]]) -> list[Block]:
    blocks: list[Block] = []
    run: list[ChangedLine] = []
    status: Status | None = None
    for st, ln in lines:
        if run and st != status:
            blocks.append(Block(status or st, tuple(run)))
            run = []
        status = st
        run.append(ln)
    if run and status is not None:
        blocks.append(Block(status, tuple(run)))
    return blocks


def compare_file(path: str, a: FileDiff | None, b: FileDiff | None, *, a_text: str = "",
                 b_text: str = "") -> FileComparison:  # fmt: skip
    """Compare two candidates' changes to one file. `a_text`/`b_text` (the files' diff text)
    decide binary files, which have no lines to match."""
    if (a is not None and a.is_binary) or (b is not None and b.is_binary):
        same = a is not None and b is not None and _binary_body(a_text) == _binary_body(b_text)
        return FileComparison(path, a, b, (), (), (), binary_same=same)
    ka, kb = _keyed(a), _keyed(b)
    keys_b = {k for k, _ in kb}
    keys_a = {k for k, _ in ka}
    in_a: list[tuple[Status, ChangedLine]] = [
        ("shared" if k in keys_b else "only_a", ln) for k, ln in ka
    ]
    blocks_a = _blocks(in_a)
    blocks_b = _blocks([("only_b", ln) for k, ln in kb if k not in keys_a])
    return FileComparison(
        path,
        a,
        b,
        only_a=tuple(x for x in blocks_a if x.status == "only_a"),
        only_b=tuple(blocks_b),
        shared=tuple(x for x in blocks_a if x.status == "shared"),
    )


def _binary_body(text: str) -> list[str]:
    # The `index` line names blob hashes of both sides; the rest says what the file becomes.
    return [ln for ln in text.split("\n") if not ln.startswith(("index ", "diff --git "))]


def compare_patches(a: Patch, b: Patch) -> list[FileComparison]:
    """Per file, what A's patch does that B's does not, and back; A's files first in A's
    order, then the files only B touches."""
    paths = list(a.by_path) + [p for p in b.by_path if p not in a.by_path]
    out = []
    for path in paths:
        fa, fb = a.by_path.get(path), b.by_path.get(path)
        out.append(
            compare_file(
                path,
                fa,
                fb,
                a_text=a.file_text(fa) if fa is not None else "",
                b_text=b.file_text(fb) if fb is not None else "",
            )
        )
    return out
