"""The project's one unified-diff parser (git and plain `diff -u` output).

Candidate patches are untrusted and sometimes malformed, so the parser never raises: lines it
cannot place are skipped and named in `Patch.problems`, and a hunk whose counts run past its real
body ends early with what was read. Hunk bodies are read by their header counts (not by prefix
alone) so that a removed line that itself starts with `--- ` is not taken for the next file.
Lines are split on "\\n" only: a form feed or U+2028 inside a line is content.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from grading.diffs.model import FileDiff, Hunk, Line, Patch

_HUNK_RE = re.compile(r"@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@ ?(.*)")
_BINARY_RE = re.compile(r"Binary files (.+?) and (.+?) differ$")
_DEV_NULL = "/dev/null"
_C_ESCAPES = {"n": 10, "t": 9, '"': 34, "\\": 92, "a": 7, "b": 8, "f": 12, "r": 13, "v": 11}


def decode_diff(diff: str | bytes) -> str:
    """Text of a stored diff: UTF-8, with U+FFFD for bytes that are not (the stored bytes stay
    the source of truth; a replaced byte never adds or removes a line)."""
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
            octal = body[i + 1 : i + 4]
            if len(octal) == 3 and octal.isdigit():
                out.append(int(octal, 8) & 0xFF)
                i += 4
                continue
            out.append(_C_ESCAPES.get(nxt, ord(nxt) & 0xFF))
            i += 2
            continue
        out += ch.encode("utf-8", errors="replace")
        i += 1
    return out.decode("utf-8", errors="replace")


def _header_path(name: str, prefix: str) -> str | None:
    """A path from a ---/+++ line: without its timestamp, quoting and a/ or b/ prefix."""
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
            old = _header_path(rest[: end + 1], "a/") or ""
            return old, _header_path(rest[end + 2 :], "b/") or ""
    # Unrenamed files have equal halves: "a/P b/P".
    half = (len(rest) - 1) // 2
    left, right = rest[:half], rest[half + 1 :]
    if left[2:] == right[2:] and left.startswith("a/") and right.startswith("b/"):
        return left[2:], right[2:]
    cut = rest.rfind(" b/")
    if cut > 0:
        return _header_path(rest[:cut], "a/") or "", _header_path(rest[cut + 1 :], "b/") or ""
    return rest, rest


@dataclass
class _File:
    """A file while it is being read; frozen into a `FileDiff` at the end."""

    start: int
    old_path: str | None = None
    new_path: str | None = None
    hunks: list[Hunk] = field(default_factory=list)
    binary: bool = False
    is_new: bool = False
    is_deleted: bool = False
    is_rename: bool = False
    # Set once the ---/+++ pair was seen, so a second pair starts a new file.
    headers_done: bool = False
    # A line that is not part of the diff came after the last hunk.
    stray_after_hunk: bool = False

    def freeze(self, end: int) -> FileDiff:
        return FileDiff(
            old_path=None if self.is_new else self.old_path,
            new_path=None if self.is_deleted else self.new_path,
            hunks=tuple(self.hunks),
            is_binary=self.binary,
            is_rename=self.is_rename,
            start=self.start,
            end=end,
        )


def _extended_header(cur: _File, line: str) -> None:
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
    elif line.startswith("GIT binary patch") or _BINARY_RE.match(line):
        cur.binary = True


class _Reader:
    def __init__(self, lines: list[str]) -> None:
        self.lines = lines
        self.files: list[FileDiff] = []
        self.problems: list[str] = []
        self.cur: _File | None = None

    def problem(self, i: int, text: str) -> None:
        self.problems.append(f"line {i + 1}: {text}")

    def start_file(self, i: int) -> _File:
        if self.cur is not None:
            self.files.append(self.cur.freeze(i))
        self.cur = _File(start=i)
        return self.cur

    def read(self) -> Patch:
        lines, i, n = self.lines, 0, len(self.lines)
        while i < n:
            i = self.step(i, lines[i])
        if self.cur is not None:
            self.files.append(self.cur.freeze(n))
        return Patch(tuple(self.files), tuple(lines), tuple(self.problems))

    def step(self, i: int, line: str) -> int:
        """Read what starts at line i; returns the index of the next unread line."""
        lines, cur = self.lines, self.cur
        if line.startswith("diff --git "):
            cur = self.start_file(i)
            cur.old_path, cur.new_path = _git_header_paths(line[len("diff --git ") :])
            return i + 1
        if line.startswith("--- ") and i + 1 < len(lines) and lines[i + 1].startswith("+++ "):
            if cur is None or cur.headers_done or cur.hunks:
                cur = self.start_file(i)
            cur.old_path = _header_path(line[4:], "a/")
            cur.new_path = _header_path(lines[i + 1][4:], "b/")
            cur.headers_done = True
            return i + 2
        match = _HUNK_RE.match(line) if line.startswith("@@ ") else None
        if match is not None:
            if cur is None:
                self.problem(i, "hunk before any file header; skipped")
                return i + 1
            if cur.stray_after_hunk:
                self.problem(i, "hunk after lines that are not part of the diff")
                cur.stray_after_hunk = False
            return self.read_hunk(i, match)
        binary = _BINARY_RE.match(line.rstrip("\r"))
        if binary is not None and (cur is None or cur.headers_done or cur.hunks):
            # Plain `diff -r` prints this line alone, with no header before it.
            cur = self.start_file(i)
            cur.old_path = _header_path(binary[1], "a/")
            cur.new_path = _header_path(binary[2], "b/")
            cur.binary = cur.headers_done = True
            return i + 1
        if cur is not None and not cur.hunks:
            _extended_header(cur, line)
        elif cur is not None and line.strip() and not line.startswith("\\"):
            cur.stray_after_hunk = True
        return i + 1

    def read_hunk(self, i: int, m: re.Match[str]) -> int:
        """Read the hunk whose header is lines[i]; returns the index after its body."""
        assert self.cur is not None
        old_len = int(m[2]) if m[2] is not None else 1
        new_len = int(m[4]) if m[4] is not None else 1
        old_start, new_start = int(m[1]), int(m[3])
        old_no = old_start if old_len else old_start + 1
        new_no = new_start if new_len else new_start + 1
        old_left, new_left = old_len, new_len
        body: list[Line] = []
        lines, header, j, n = self.lines, i, i + 1, len(self.lines)

        def mark_no_newline() -> None:
            if body:
                last = body[-1]
                body[-1] = Line(last.kind, last.text, last.old_no, last.new_no, last.raw, True)

        while j < n and (old_left > 0 or new_left > 0):
            raw = lines[j]
            tag = raw[:1]
            if tag == "\\":
                mark_no_newline()
            elif (tag == " " or raw in ("", "\r")) and old_left > 0 and new_left > 0:
                # Some tools strip the single space of an empty context line.
                body.append(Line(" ", raw[1:], old_no, new_no, j))
                old_no, new_no, old_left, new_left = (
                    old_no + 1,
                    new_no + 1,
                    old_left - 1,
                    new_left - 1,
                )
            elif tag == "-" and old_left > 0:
                body.append(Line("-", raw[1:], old_no, None, j))
                old_no, old_left = old_no + 1, old_left - 1
            elif tag == "+" and new_left > 0:
                body.append(Line("+", raw[1:], None, new_no, j))
                new_no, new_left = new_no + 1, new_left - 1
            else:
                break
            j += 1
        if old_left > 0 or new_left > 0:
            self.problem(
                j if j < n else header,
                f"hunk {lines[header].rstrip()!r} ends early: {old_len - old_left} of {old_len} "
                f"old and {new_len - new_left} of {new_len} new lines present",
            )
        while j < n and lines[j].startswith("\\"):
            mark_no_newline()
            j += 1
        section = m[5].rstrip("\r")
        self.cur.hunks.append(
            Hunk(old_start, old_len, new_start, new_len, section, tuple(body), header)
        )
        return j


def parse_patch(diff: str | bytes) -> Patch:
    """Split a unified diff into files, hunks and numbered lines. Never raises."""
    lines = decode_diff(diff).split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return _Reader(lines).read()
