"""Read-only views of a checked-out tree: listing, numbered reading, search."""

from __future__ import annotations

import os
import re
from pathlib import Path

from grading.grader.workspace import PathRefused, resolve_in_tree

MAX_READ_LINES = 400
MAX_LIST_ENTRIES = 500
MAX_GREP_FILE_BYTES = 1_000_000


class _NotFound(PathRefused):
    pass


def _is_inside(root: Path, path: Path) -> bool:
    real = path.resolve()
    return real == root or root in real.parents


def list_files(root: Path, rel: str, depth: int) -> list[str]:
    """Entries under `rel`, directories with a trailing slash (at most MAX_LIST_ENTRIES + 1)."""
    real_root = root.resolve()
    start = resolve_in_tree(root, rel)
    if not start.is_dir():
        raise _NotFound(f"not a directory: {rel!r}")
    out: list[str] = []
    for dirpath, dirnames, filenames in os.walk(start):
        here = Path(dirpath)
        level = len(here.relative_to(start).parts)
        dirnames[:] = sorted(d for d in dirnames if d != ".git" and _is_inside(real_root, here / d))
        out += [str((here / d).relative_to(real_root)) + "/" for d in dirnames]
        if level + 1 >= depth:
            dirnames[:] = []
        out += [
            str((here / f).relative_to(real_root))
            for f in sorted(filenames)
            if f != ".git" and _is_inside(real_root, here / f)
        ]
        if len(out) > MAX_LIST_ENTRIES:
            break
    out.sort()
    return out


def read_lines(root: Path, rel: str) -> list[str]:
    path = resolve_in_tree(root, rel)
    if not path.is_file():
        raise _NotFound(f"no such file: {rel!r}")
    return path.read_text(encoding="utf-8", errors="replace").splitlines()


def grep(root: Path, pattern: str, rel: str, limit: int) -> tuple[list[str], bool]:
    """Up to `limit` matches as `path:line: text`, and whether there were more."""
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
                if len(hits) >= limit:
                    return hits, True
                hits.append(f"{f.relative_to(real_root)}:{n}: {line[:200]}")
    return hits, False
