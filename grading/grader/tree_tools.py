"""Read-only views of a checked-out tree: listing, numbered reading, search."""

from __future__ import annotations

import os
import re
from pathlib import Path

from grading.grader.render import numbered
from grading.grader.workspace import PathRefused, resolve_in_tree

MAX_READ_LINES = 400
MAX_LIST_ENTRIES = 500
MAX_GREP_FILE_BYTES = 1_000_000


class _NotFound(PathRefused):
    pass


def _is_inside(root: Path, path: Path) -> bool:
    real = path.resolve()
    return real == root or root in real.parents


def list_files(root: Path, rel: str, depth: int) -> str:
    real_root = root.resolve()
    start = resolve_in_tree(root, rel)
    if not start.is_dir():
        raise _NotFound(f"not a directory: {rel!r}")
    out: list[str] = []
    for dirpath, dirnames, filenames in os.walk(start):
        here = Path(dirpath)
        level = len(here.relative_to(start).parts)
        dirnames[:] = sorted(d for d in dirnames if d != ".git" and _is_inside(real_root, here / d))
        if level + 1 >= depth:
            out += [str((here / d).relative_to(real_root)) + "/" for d in dirnames]
            dirnames[:] = []
        else:
            out += [str((here / d).relative_to(real_root)) + "/" for d in dirnames]
        out += [
            str((here / f).relative_to(real_root))
            for f in sorted(filenames)
            if f != ".git" and _is_inside(real_root, here / f)
        ]
        if len(out) > MAX_LIST_ENTRIES:
            break
    out.sort()
    more = (
        f"\n[{len(out) - MAX_LIST_ENTRIES} more entries not shown]"
        if len(out) > MAX_LIST_ENTRIES
        else ""
    )
    return "\n".join(out[:MAX_LIST_ENTRIES]) + more


def read_file(root: Path, rel: str, start: int, end: int) -> tuple[str, str]:
    """(trusted header, numbered lines) for lines start..end (end 0 = as many as allowed)."""
    path = resolve_in_tree(root, rel)
    if not path.is_file():
        raise _NotFound(f"no such file: {rel!r}")
    lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    last = min(
        len(lines), end if end >= start else start + MAX_READ_LINES - 1, start + MAX_READ_LINES - 1
    )
    header = f"{rel}: lines {start}-{last} of {len(lines)}"
    return header, numbered(lines[start - 1 : last], start)


def grep(root: Path, pattern: str, rel: str, max_results: int) -> str:
    try:
        rx = re.compile(pattern)
    except re.error:
        rx = re.compile(re.escape(pattern))
    real_root = root.resolve()
    start = resolve_in_tree(root, rel)
    files = [start] if start.is_file() else []
    if start.is_dir():
        for dirpath, dirnames, filenames in os.walk(start):
            dirnames[:] = sorted(d for d in dirnames if d != ".git")
            files += [Path(dirpath) / f for f in sorted(filenames)]
    hits: list[str] = []
    for f in files:
        if (
            not _is_inside(real_root, f)
            or not f.is_file()
            or f.stat().st_size > MAX_GREP_FILE_BYTES
        ):
            continue
        data = f.read_bytes()
        if b"\0" in data[:8192]:
            continue
        for n, line in enumerate(data.decode("utf-8", "replace").splitlines(), 1):
            if rx.search(line):
                hits.append(f"{f.relative_to(real_root)}:{n}: {line[:200]}")
                if len(hits) >= max_results:
                    return "\n".join(hits) + f"\n[stopped at {max_results} results]"
    return "\n".join(hits) if hits else "(no matches)"
