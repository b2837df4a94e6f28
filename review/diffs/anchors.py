"""Which lines of a file diff a reviewer can anchor a fix request to (pure).

A reviewer sees, per file, the diff's hunks and (when the task's base tree was available) the
whole pre-image as expandable context, so the lines that exist are those rows: every line of
the old file on the old side and every line of the post-patch file on the new side. Without
the pre-image only the hunks' own lines are shown. A new file has no old side and a deleted
file no new side.
"""

from __future__ import annotations

from typing import Literal

from grading.diffs import FileDiff

Side = Literal["old", "new"]


def anchor_problem(
    file: FileDiff, *, line: int, side: str, old_line_count: int | None = None
) -> str | None:
    """Why (`line`, `side`) is not a line the reviewer was shown in `file`, or None if it is.

    `old_line_count` is the length of the pre-image the page was rendered with, or None when
    it was rendered from the hunks alone.
    """
    if side not in ("old", "new"):
        return f"Side must be old or new, not {side!r}."
    if file.is_binary:
        return f"{file.path} is a binary file: there are no lines to comment on."
    if side == "old" and file.change == "added":
        return f"{file.path} is a new file: it has no old side. Use the new side."
    if side == "new" and file.change == "deleted":
        return f"{file.path} is deleted: it has no new side. Use the old side."
    last = _last_line(file, side, old_line_count)
    if line < 1 or line > last:
        shown = f"lines 1–{last}" if last else "no lines"
        return f"{file.path} has no {side} line {line} ({side} side: {shown})."
    if old_line_count is None and line not in _hunk_lines(file, side):
        return f"{file.path}: {side} line {line} is not in the diff shown."
    return None


def _hunk_lines(file: FileDiff, side: str) -> set[int]:
    numbers: set[int] = set()
    for hunk in file.hunks:
        for ln in hunk.lines:
            n = ln.old_no if side == "old" else ln.new_no
            if n is not None:
                numbers.add(n)
    return numbers


def _last_line(file: FileDiff, side: str, old_line_count: int | None) -> int:
    if old_line_count is not None and file.change != "added":
        if side == "old":
            return old_line_count
        return old_line_count + file.lines_added - file.lines_removed
    return max(_hunk_lines(file, side), default=0)


def line_count(text: str) -> int:
    """Lines in a file's text as the renderer splits it (a final newline ends the last line)."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return len(lines)
