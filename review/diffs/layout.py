"""From a parsed file to side-by-side rows, then to chunks with collapsed unchanged runs.

Each side is a flat list of line texts (what gets highlighted once); rows point into those lists
by position. Without the old file, the sides hold only the hunk lines and the space between
hunks becomes a `Gap`. With the old file, the sides are the whole old and new files, and the
space between hunks becomes ordinary unchanged rows that the collapsing step folds away.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Literal

from grading.diffs import FileDiff, Hunk, Line, PostPair

RowKind = Literal["equal", "replace", "delete", "insert"]
ChunkKind = Literal["equal", "change", "collapsed", "gap"]


@dataclass(frozen=True, slots=True)
class Row:
    kind: RowKind
    old_no: int | None
    new_no: int | None
    old_pos: int | None  # index into Sides.old
    new_pos: int | None


@dataclass(frozen=True, slots=True)
class Gap:
    """Old lines that sit between hunks but are not in the diff (count known from headers)."""

    count: int
    section: str


Item = Row | Gap


@dataclass(slots=True)
class Sides:
    old: list[str] = field(default_factory=list)
    new: list[str] = field(default_factory=list)
    old_no_newline: set[int] = field(default_factory=set)
    new_no_newline: set[int] = field(default_factory=set)
    full: bool = False  # True when built from the whole old file


@dataclass(frozen=True, slots=True)
class Chunk:
    kind: ChunkKind
    rows: Sequence[Row] = ()
    gap: Gap | None = None


def _pair(items: list[Item], dels: list[tuple[Line, int]], adds: list[tuple[Line, int]]) -> None:
    """Pair a change block in order: replaces first, then leftover deletes or inserts."""
    for k in range(max(len(dels), len(adds))):
        d = dels[k] if k < len(dels) else None
        a = adds[k] if k < len(adds) else None
        if d and a:
            items.append(Row("replace", d[0].old_no, a[0].new_no, d[1], a[1]))
        elif d:
            items.append(Row("delete", d[0].old_no, None, d[1], None))
        elif a:
            items.append(Row("insert", None, a[0].new_no, None, a[1]))
    dels.clear()
    adds.clear()


def _hunk_rows(
    hunk: Hunk,
    items: list[Item],
    sides: Sides,
    place_old: Callable[[Line], int],
    place_new: Callable[[Line], int],
) -> None:
    dels: list[tuple[Line, int]] = []
    adds: list[tuple[Line, int]] = []
    for line in hunk.lines:
        if line.kind == "-":
            dels.append((line, place_old(line)))
            if line.no_newline:
                sides.old_no_newline.add(dels[-1][1])
        elif line.kind == "+":
            adds.append((line, place_new(line)))
            if line.no_newline:
                sides.new_no_newline.add(adds[-1][1])
        else:
            _pair(items, dels, adds)
            o, n = place_old(line), place_new(line)
            if line.no_newline:
                sides.old_no_newline.add(o)
                sides.new_no_newline.add(n)
            items.append(Row("equal", line.old_no, line.new_no, o, n))
    _pair(items, dels, adds)


def rows_from_hunks(file: FileDiff) -> tuple[Sides, list[Item]]:
    sides = Sides()
    items: list[Item] = []

    def place_old(line: Line) -> int:
        sides.old.append(line.text)
        return len(sides.old) - 1

    def place_new(line: Line) -> int:
        sides.new.append(line.text)
        return len(sides.new) - 1

    next_old = 1
    for hunk in file.hunks:
        missing = hunk.first_old - next_old
        if missing > 0:
            items.append(Gap(missing, hunk.section))
        _hunk_rows(hunk, items, sides, place_old, place_new)
        next_old = hunk.next_old
    return sides, items


def _matches(file: FileDiff, old_lines: list[str]) -> bool:
    """The hunks' old-side lines must agree with the supplied old file, else it is ignored."""
    next_old = 1
    for hunk in file.hunks:
        # Hunks must be in order and inside the file, or the copying below would misindex.
        if hunk.first_old < next_old or hunk.next_old - 1 > len(old_lines):
            return False
        next_old = hunk.next_old
        for line in hunk.lines:
            if line.old_no is None:
                continue
            if line.old_no > len(old_lines):
                return False
            if old_lines[line.old_no - 1].rstrip("\r") != line.text.rstrip("\r"):
                return False
    return True


def rows_from_full(file: FileDiff, old_text: str) -> tuple[Sides, list[Item]] | None:
    """Rows over the whole file; None when the old text does not fit the diff."""
    old_lines = old_text.split("\n")
    if old_lines and old_lines[-1] == "":
        old_lines.pop()
    if not _matches(file, old_lines):
        return None
    sides = Sides(old=old_lines, full=True)
    items: list[Item] = []
    new_no = 1

    def place_old(line: Line) -> int:
        assert line.old_no is not None
        return line.old_no - 1

    def place_new(line: Line) -> int:
        sides.new.append(line.text)
        return len(sides.new) - 1

    def copy_unchanged(old_from: int, old_to: int) -> None:
        nonlocal new_no
        for old_no in range(old_from, old_to):
            sides.new.append(old_lines[old_no - 1])
            items.append(Row("equal", old_no, new_no, old_no - 1, len(sides.new) - 1))
            new_no += 1

    next_old = 1
    for hunk in file.hunks:
        copy_unchanged(next_old, hunk.first_old)
        _hunk_rows(hunk, items, sides, place_old, place_new)
        new_no += sum(1 for ln in hunk.lines if ln.kind != "-")
        next_old = hunk.next_old
    copy_unchanged(next_old, len(old_lines) + 1)
    return sides, items


def paginate(items: Sequence[Item], page_size: int) -> list[list[Item]]:
    """Split into pages of at most `page_size` items (a gap separator counts as one)."""
    size = max(1, page_size)
    pages = [list(items[i : i + size]) for i in range(0, len(items), size)]
    return pages or [[]]


def chunk_items(items: Sequence[Item], context: int) -> list[Chunk]:
    """Group rows into change and unchanged chunks, folding long unchanged runs.

    An unchanged run longer than 2 x context keeps `context` lines next to each neighbouring
    change and folds the rest; at a page edge, file edge or gap there is no neighbour to keep
    context for, so the fold reaches the edge.
    """
    chunks: list[Chunk] = []
    run: list[Row] = []
    run_is_equal = False

    def flush(after_change: bool) -> None:
        if not run:
            return
        if not run_is_equal:
            chunks.append(Chunk("change", tuple(run)))
        else:
            before = bool(chunks) and chunks[-1].kind == "change"
            head = context if before else 0
            tail = context if after_change else 0
            if len(run) > 2 * context and len(run) > head + tail:
                if head:
                    chunks.append(Chunk("equal", tuple(run[:head])))
                chunks.append(Chunk("collapsed", tuple(run[head : len(run) - tail])))
                if tail:
                    chunks.append(Chunk("equal", tuple(run[len(run) - tail :])))
            else:
                chunks.append(Chunk("equal", tuple(run)))
        run.clear()

    for item in items:
        if isinstance(item, Gap):
            flush(after_change=False)
            chunks.append(Chunk("gap", gap=item))
            continue
        is_equal = item.kind == "equal"
        if run and is_equal != run_is_equal:
            flush(after_change=not is_equal)
        run_is_equal = is_equal
        run.append(item)
    flush(after_change=False)
    return chunks


def rows_from_post_pair(pair: PostPair) -> tuple[Sides, list[Item]]:
    """Rows between two candidates' post-patch versions of one file: A's lines on the old
    side, B's on the new side, paired by difflib's alignment of each segment. Base lines no
    hunk shows (a pair rebuilt from hunks alone) become gaps."""
    sides = Sides(full=pair.complete)
    items: list[Item] = []
    for index, seg in enumerate(pair.segments):
        unknown = pair.unknown_before(index)
        if unknown:
            items.append(Gap(unknown, ""))
        a0, b0 = len(sides.old), len(sides.new)
        sides.old += [ln.content for ln in seg.a]
        sides.new += [ln.content for ln in seg.b]
        for tag, i1, i2, j1, j2 in seg.opcodes():
            if tag == "equal":
                items += [
                    Row("equal", seg.a[i].no, seg.b[j].no, a0 + i, b0 + j)
                    for i, j in zip(range(i1, i2), range(j1, j2), strict=True)
                ]
                continue
            for k in range(max(i2 - i1, j2 - j1)):
                i, j = i1 + k, j1 + k
                if i < i2 and j < j2:
                    items.append(Row("replace", seg.a[i].no, seg.b[j].no, a0 + i, b0 + j))
                elif i < i2:
                    items.append(Row("delete", seg.a[i].no, None, a0 + i, None))
                else:
                    items.append(Row("insert", None, seg.b[j].no, None, b0 + j))
    return sides, items
