"""A tolerant unified-diff parser (git and plain `diff -u` output).

Candidate patches are untrusted and sometimes malformed, so the parser never raises: lines it
cannot place are skipped, and a hunk whose counts run past the real body simply ends early.
Hunk bodies are read by their header counts (not by prefix alone) so that a removed line that
itself starts with `--- ` is not mistaken for the next file header.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Literal

ChangeKind = Literal["added", "modified", "deleted", "renamed", "binary"]
LineKind = Literal[" ", "-", "+"]

_HUNK_RE = re.compile(r"@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@ ?(.*)")
_DEV_NULL = "/dev/null"
_C_ESCAPES = {"n": 10, "t": 9, '"': 34, "\\": 92, "a": 7, "b": 8, "f": 12, "r": 13, "v": 11}


@dataclass(slots=True)
class Line:
    kind: LineKind
    # Raw text without the prefix; may end in "\r" for CRLF content.
    text: str
    old_no: int | None
    new_no: int | None
    no_newline: bool = False


@dataclass(slots=True)
class Hunk:
    old_start: int
    old_len: int
    new_start: int
    new_len: int
    section: str
    lines: list[Line] = field(default_factory=list)

    @property
    def first_old(self) -> int:
        """First old line the hunk covers (for a pure insertion, the line after `old_start`)."""
        return self.old_start if self.old_len else self.old_start + 1

    @property
    def next_old(self) -> int:
        """First old line after the hunk."""
        return self.old_start + self.old_len if self.old_len else self.old_start + 1


@dataclass(slots=True)
class FileDiff:
    old_path: str | None = None  # None means /dev/null
    new_path: str | None = None
    hunks: list[Hunk] = field(default_factory=list)
    binary: bool = False
    is_new: bool = False
    is_deleted: bool = False
    is_rename: bool = False
    # Set once the ---/+++ pair was seen, so a second pair starts a new file.
    headers_done: bool = False

    @property
    def path(self) -> str:
        return self.new_path or self.old_path or ""

    @property
    def change(self) -> ChangeKind:
        if self.binary:
            return "binary"
        if self.is_new or self.old_path is None:
            return "added"
        if self.is_deleted or self.new_path is None:
            return "deleted"
        if self.is_rename or self.old_path != self.new_path:
            return "renamed"
        return "modified"

    @property
    def added(self) -> int:
        return sum(1 for h in self.hunks for ln in h.lines if ln.kind == "+")

    @property
    def removed(self) -> int:
        return sum(1 for h in self.hunks for ln in h.lines if ln.kind == "-")


def decode_diff(diff: str | bytes) -> str:
    """Decode for display: UTF-8, with U+FFFD for bytes that are not."""
    if isinstance(diff, str):
        return diff
    return diff.decode("utf-8", errors="replace")


def _unquote(name: str) -> str:
    """Undo git's C-style quoting of unusual paths ("a/caf\\303\\251.py")."""
    if len(name) < 2 or not (name.startswith('"') and name.endswith('"')):
        return name
    body, out, i = name[1:-1], bytearray(), 0
    while i < len(body):
        ch = body[i]
        if ch == "\\" and i + 1 < len(body):
            nxt = body[i + 1]
            if body[i + 1 : i + 4].isdigit() and len(body[i + 1 : i + 4]) == 3:
                out.append(int(body[i + 1 : i + 4], 8) & 0xFF)
                i += 4
                continue
            out.append(_C_ESCAPES.get(nxt, ord(nxt) & 0xFF))
            i += 2
            continue
        out += ch.encode("utf-8")
        i += 1
    return out.decode("utf-8", errors="replace")


def _strip_prefix(name: str, prefix: str) -> str | None:
    name = _unquote(name.split("\t", 1)[0].rstrip("\r"))
    if name == _DEV_NULL:
        return None
    return name[len(prefix) :] if name.startswith(prefix) else name


def _git_header_paths(rest: str) -> tuple[str, str]:
    """Paths from `diff --git a/X b/Y`; ambiguous with spaces, so later headers may override."""
    rest = rest.rstrip("\r")
    if rest.startswith('"'):
        end = rest.find('" ', 1)
        if end > 0:
            return _strip_prefix(rest[: end + 1], "a/") or "", _strip_prefix(
                rest[end + 2 :], "b/"
            ) or ""
    # Unrenamed files have equal halves: "a/P b/P".
    half = (len(rest) - 1) // 2
    left, right = rest[:half], rest[half + 1 :]
    if left[2:] == right[2:] and left.startswith("a/") and right.startswith("b/"):
        return left[2:], right[2:]
    cut = rest.rfind(" b/")
    if cut > 0:
        return _strip_prefix(rest[:cut], "a/") or "", _strip_prefix(rest[cut + 1 :], "b/") or ""
    return rest, rest


def _extended_header(cur: FileDiff, line: str) -> None:
    line = line.rstrip("\r")
    if line.startswith("new file mode"):
        cur.is_new = True
    elif line.startswith("deleted file mode"):
        cur.is_deleted = True
    elif line.startswith(("rename from ", "copy from ")):
        cur.old_path = _unquote(line.split(" ", 2)[2])
        cur.is_rename = True
    elif line.startswith(("rename to ", "copy to ")):
        cur.new_path = _unquote(line.split(" ", 2)[2])
        cur.is_rename = True
    elif line.startswith("GIT binary patch") or (
        line.startswith("Binary files ") and line.endswith(" differ")
    ):
        cur.binary = True


def _read_hunk(lines: list[str], i: int, hunk: Hunk) -> int:
    """Read a hunk body starting at `lines[i]`; returns the index after it."""
    old_left, new_left = hunk.old_len, hunk.new_len
    old_no, new_no = hunk.old_start if hunk.old_len else hunk.old_start + 1, hunk.new_start
    if not hunk.new_len:
        new_no = hunk.new_start + 1
    body = hunk.lines
    n = len(lines)
    while i < n and (old_left > 0 or new_left > 0):
        raw = lines[i]
        tag = raw[:1]
        if tag == "\\":
            if body:
                body[-1].no_newline = True
        elif tag in (" ", "") and old_left > 0 and new_left > 0:
            # Some tools strip the single space of an empty context line.
            body.append(Line(" ", raw[1:], old_no, new_no))
            old_no, new_no, old_left, new_left = old_no + 1, new_no + 1, old_left - 1, new_left - 1
        elif tag == "-" and old_left > 0:
            body.append(Line("-", raw[1:], old_no, None))
            old_no, old_left = old_no + 1, old_left - 1
        elif tag == "+" and new_left > 0:
            body.append(Line("+", raw[1:], None, new_no))
            new_no, new_left = new_no + 1, new_left - 1
        else:
            break  # Malformed or truncated hunk: stop here, keep what was read.
        i += 1
    while i < n and lines[i].startswith("\\"):
        if body:
            body[-1].no_newline = True
        i += 1
    return i


def parse_patch(diff: str | bytes) -> list[FileDiff]:
    """Split a unified diff into files and hunks. Never raises on malformed input."""
    lines = decode_diff(diff).split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    files: list[FileDiff] = []
    cur: FileDiff | None = None
    i, n = 0, len(lines)
    while i < n:
        line = lines[i]
        if line.startswith("diff --git "):
            old, new = _git_header_paths(line[len("diff --git ") :])
            cur = FileDiff(old_path=old, new_path=new)
            files.append(cur)
        elif line.startswith("--- ") and i + 1 < n and lines[i + 1].startswith("+++ "):
            if cur is None or cur.headers_done or cur.hunks:
                cur = FileDiff()
                files.append(cur)
            cur.old_path = _strip_prefix(line[4:], "a/")
            cur.new_path = _strip_prefix(lines[i + 1][4:], "b/")
            cur.headers_done = True
            i += 2
            continue
        elif line.startswith("@@ ") and cur is not None:
            m = _HUNK_RE.match(line)
            if m:
                hunk = Hunk(
                    old_start=int(m[1]),
                    old_len=int(m[2]) if m[2] is not None else 1,
                    new_start=int(m[3]),
                    new_len=int(m[4]) if m[4] is not None else 1,
                    section=m[5].rstrip("\r"),
                )
                cur.hunks.append(hunk)
                i = _read_hunk(lines, i + 1, hunk)
                continue
        elif cur is not None and not cur.hunks:
            _extended_header(cur, line)
        i += 1
    for f in files:
        if f.is_new:
            f.old_path = None
        if f.is_deleted:
            f.new_path = None
    return files
