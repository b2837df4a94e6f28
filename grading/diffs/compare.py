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
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from difflib import SequenceMatcher
from typing import Literal

from grading.diffs.model import FileDiff, LineKind, Patch

Status = Literal["shared", "only_a", "only_b"]
Opcode = tuple[Literal["replace", "delete", "insert", "equal"], int, int, int, int]
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


# ---------------------------------------------------------------------------------------------
# Post-patch versions side by side: what each candidate's file *is* after its patch, aligned.


@dataclass(frozen=True, slots=True)
class PostLine:
    """One line of a candidate's post-patch file."""

    no: int  # its line number in that post-patch file
    content: str  # without a CRLF's carriage return
    changed: bool  # written by the candidate's patch (False: a base line it kept)


@dataclass(frozen=True, slots=True)
class PostSegment:
    """Both candidates' post-patch lines over one stretch of base lines [base_start, base_end]
    (base_end = base_start - 1: an insertion point between two base lines)."""

    base_start: int
    base_end: int
    a: tuple[PostLine, ...]
    b: tuple[PostLine, ...]

    def opcodes(self) -> list[Opcode]:
        """difflib's opcodes from A's lines to B's (equal / replace / delete / insert)."""
        matcher = SequenceMatcher(
            None, [ln.content for ln in self.a], [ln.content for ln in self.b], autojunk=False
        )
        return matcher.get_opcodes()


@dataclass(frozen=True, slots=True)
class PostPair:
    """Two candidates' post-patch versions of one file, in segments over the shared base.

    `complete`: the segments hold the whole files (the base was supplied, or the diffs show
    all of it: a new or deleted file). Otherwise only the stretches the hunks show are known,
    and the base lines between segments (`unknown_before`) are not.
    """

    path: str
    complete: bool
    segments: tuple[PostSegment, ...]

    def unknown_before(self, index: int) -> int:
        """How many unknown base lines lie between segment `index - 1` and segment `index`."""
        if self.complete:
            return 0
        prev_end = self.segments[index - 1].base_end if index else 0
        return max(0, self.segments[index].base_start - prev_end - 1)

    @property
    def identical(self) -> bool:
        return all([ln.content for ln in s.a] == [ln.content for ln in s.b] for s in self.segments)


def _split_base(text: str) -> list[str]:
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return [ln[:-1] if ln.endswith("\r") else ln for ln in lines]


def _apply(base: list[str], file: FileDiff | None) -> list[PostLine] | None:
    """The whole post-patch file, or None when the hunks do not fit `base`."""
    if file is None:
        return [PostLine(i + 1, t, False) for i, t in enumerate(base)]
    if file.is_deleted:
        return []
    out: list[PostLine] = []

    def keep(n: int) -> None:
        out.append(PostLine(len(out) + 1, base[n - 1], False))

    next_old = 1
    for hunk in file.hunks:
        if hunk.first_old < next_old or hunk.next_old - 1 > len(base):
            return None
        for n in range(next_old, hunk.first_old):
            keep(n)
        for ln in hunk.lines:
            if ln.kind == "+":
                out.append(PostLine(len(out) + 1, ln.content, True))
                continue
            assert ln.old_no is not None
            if base[ln.old_no - 1] != ln.content:
                return None
            if ln.kind == " ":
                keep(ln.old_no)
        next_old = hunk.next_old
    for n in range(next_old, len(base) + 1):
        keep(n)
    return out


class _Walker:
    """One candidate's changes indexed by base line, to rebuild any stretch of its post file."""

    def __init__(self, file: FileDiff | None) -> None:
        self.removed: set[int] = set()
        self.inserts: dict[int, list[ChangedLine]] = {}
        self.context_no: dict[int, int] = {}
        self.shifts: list[tuple[int, int]] = []  # (first base line after a hunk, its shift)
        if file is None:
            return
        for ln in changed_lines(file):
            if ln.kind == "-":
                self.removed.add(ln.base_line)
            else:
                self.inserts.setdefault(ln.base_line, []).append(ln)
        for hunk in file.hunks:
            self.shifts.append((hunk.next_old, hunk.new_len - hunk.old_len))
            for line in hunk.lines:
                if line.kind == " " and line.old_no is not None and line.new_no is not None:
                    self.context_no[line.old_no] = line.new_no

    def post_no(self, base_no: int) -> int:
        if base_no in self.context_no:
            return self.context_no[base_no]
        return base_no + sum(shift for after, shift in self.shifts if after <= base_no)

    def stretch(self, start: int, end: int, base: dict[int, str]) -> tuple[PostLine, ...]:
        out: list[PostLine] = []
        for n in range(start, end + 2):
            out += [PostLine(ln.new_no or 0, ln.content, True) for ln in self.inserts.get(n, [])]
            if n <= end and n not in self.removed:
                out.append(PostLine(self.post_no(n), base[n], False))
        return tuple(out)


def _regions(files: list[FileDiff]) -> list[tuple[int, int]]:
    """Base stretches the hunks cover, merged where they overlap or touch."""
    spans = sorted((h.first_old, h.next_old - 1) for f in files for h in f.hunks)
    merged: list[tuple[int, int]] = []
    for start, end in spans:
        if merged and start <= merged[-1][1] + 1:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged


def _hunk_lines_only(path: str, a: FileDiff | None, b: FileDiff | None) -> PostPair:
    """Two files read against different bases (a rename onto a path the other creates): only
    the post-side lines each diff shows, with no base to place them on."""

    def shown(f: FileDiff | None) -> tuple[PostLine, ...]:
        if f is None:
            return ()
        return tuple(
            PostLine(ln.new_no, ln.content, ln.kind == "+")
            for h in f.hunks
            for ln in h.lines
            if ln.kind != "-" and ln.new_no is not None
        )

    return PostPair(path, False, (PostSegment(1, 0, shown(a), shown(b)),))


def post_versions(fc: FileComparison, base: Mapping[str, str] | None = None) -> PostPair | None:
    """Both candidates' post-patch versions of one file of a comparison, aligned on the base.

    `base` maps pre-patch paths to the base file's text (the repository at the base commit);
    with it (and hunks that fit it) each side is its whole post-patch file. Without it, the
    post-patch lines are rebuilt from the hunks alone: the base lines a hunk shows (context
    and removed lines) are known, and each candidate's version of every stretch some hunk
    covers is those base lines with that candidate's own changes applied (a candidate that
    does not touch a stretch keeps it as it was). None for binary files (no lines).
    """
    a, b = fc.a, fc.b
    files = [f for f in (a, b) if f is not None]
    if any(f.is_binary for f in files) or not files:
        return None
    olds = {f.old_path for f in files}
    if len(olds) > 1:
        return _hunk_lines_only(fc.path, a, b)
    old_path = olds.pop()
    base_lines: list[str] | None = None
    if old_path is None:
        base_lines = []  # a new file: the diffs are the whole content
    elif base is not None and old_path in base:
        base_lines = _split_base(base[old_path])
    else:
        # A deletion shows every line of the file it deletes.
        deleted = next((f for f in files if f.is_deleted and f.hunks), None)
        if deleted is not None:
            base_lines = [ln.content for ln in deleted.lines_of("-")]
    if base_lines is not None:
        pa, pb = _apply(base_lines, a), _apply(base_lines, b)
        if pa is not None and pb is not None:
            return PostPair(fc.path, True, (PostSegment(1, len(base_lines), tuple(pa), tuple(pb)),))
    known: dict[int, str] = {}
    for f in files:
        for hunk in f.hunks:
            for ln in hunk.lines:
                if ln.kind != "+" and ln.old_no is not None:
                    known.setdefault(ln.old_no, ln.content)
    wa, wb = _Walker(a), _Walker(b)
    segments = tuple(
        PostSegment(s, e, wa.stretch(s, e, known), wb.stretch(s, e, known))
        for s, e in _regions(files)
    )
    return PostPair(fc.path, False, segments)
