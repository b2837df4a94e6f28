"""How the grader's tools write their output: untrusted-content delimiters, size caps, line
numbers and diff gutters, trajectory events."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from grading.diffs import Block, FileComparison, FileDiff, Patch
from grading.domain.hostile_text import mixed_script_words, mixed_scripts
from grading.grader.inputs import Event

OUTPUT_CAP = 12_000  # characters of untrusted content per tool result
# The source label of the reference solution's block: what tells it apart from any candidate.
REFERENCE_SOURCE = "reference solution (maintainers' fix, not a candidate)"
_DELIM = re.compile(r"<(\s*/?\s*untrusted)", re.IGNORECASE)


def neutralise(text: str) -> str:
    """Defuse anything in untrusted text that could pass for our own delimiters."""
    return _DELIM.sub(r"&lt;\1", text)


def untrusted(source: str, text: str) -> str:
    """Wrap content that came from candidates, tasks or tests; it is data, never instructions."""
    return f'<untrusted source="{source}">\n{neutralise(text)}\n</untrusted>'


def mixed_script_note(alias: str, patch: Patch) -> str:
    """A trusted note naming where candidate `alias`'s diff has words that mix alphabets (a
    Cyrillic а in a Latin name reads as one name and is another), or "". It names files by
    their number in "files touched" and lines by number, never by their untrusted text."""
    found: list[str] = []
    for n, path in enumerate(patch.paths, 1):
        file = patch.by_path[path]
        if any(mixed_scripts(p) for p in (file.old_path, file.new_path) if p):
            found.append(f"the name of file {n}")
        lines = [no for no, text in sorted(file.added.items()) if mixed_script_words(text)]
        if lines:
            shown = ", ".join(map(str, lines[:10])) + (", …" if len(lines) > 10 else "")
            found.append(f"added line{'s' if len(lines) > 1 else ''} {shown} of file {n}")
    if not found:
        return ""
    return (
        f"[warning: look-alike letters — words mixing alphabets in candidate {alias}: "
        + "; ".join(found)
        + "]"
    )


def cap(text: str, limit: int = OUTPUT_CAP) -> tuple[str, str]:
    """(text cut to `limit` characters, a trusted note saying what was cut — or "")."""
    if len(text) <= limit:
        return text, ""
    return text[:limit], f"[output truncated: {limit} of {len(text)} characters shown]"


def cap_head_tail(text: str, limit: int = OUTPUT_CAP) -> tuple[str, str]:
    """Keep both ends: for test output the summary at the end matters as much as the start."""
    if len(text) <= limit:
        return text, ""
    half = limit // 2
    cut = len(text) - 2 * half
    return (
        text[:half] + f"\n... [{cut} characters omitted] ...\n" + text[-half:],
        f"[output truncated: {2 * half} of {len(text)} characters shown]",
    )


def fit(items: list[str], limit: int) -> int:
    """How many leading items fit in `limit` characters joined by newlines (at least one: a
    single over-long item is shown cut, by `clip_line`)."""
    size = 0
    for i, item in enumerate(items):
        size += len(item) + 1
        if size > limit and i:
            return i
    return len(items)


def clip_line(line: str, limit: int) -> str:
    if len(line) <= limit:
        return line
    return line[:limit] + f"… [line cut: {limit} of {len(line)} characters]"


def numbered(lines: list[str], first: int) -> str:
    return "\n".join(f"{first + i:>6}\t{line}" for i, line in enumerate(lines))


def event_kind(event: Event) -> str:
    for key in ("type", "kind", "role", "source"):
        value = event.get(key)
        if isinstance(value, str) and value:
            # The kind comes from untrusted data and heads a line: keep it one plain token.
            return re.sub(r"[^\w.-]", "_", value)[:40]
    return "event"


def is_error_event(event: Event) -> bool:
    if event_kind(event).lower() == "error" or event.get("error"):
        return True
    code = event.get("exit_code")
    return isinstance(code, int) and code != 0


def event_text(event: Event, limit: int = 1500) -> str:
    rest = {k: v for k, v in event.items() if k not in ("type", "kind")}
    text = json.dumps(rest, ensure_ascii=False, default=str, sort_keys=True)
    return text if len(text) <= limit else text[:limit] + f"… [{len(text) - limit} more characters]"


def render_event(index: int, event: Event) -> str:
    flag = " error" if is_error_event(event) and event_kind(event).lower() != "error" else ""
    return f"#{index} [{event_kind(event)}{flag}] {event_text(event)}"


def gutter(old: int | None, new: int | None, line: str) -> str:
    """One diff line with its pre/post line numbers, so evidence can cite them."""
    o = "" if old is None else str(old)
    n = "" if new is None else str(new)
    return f"{o:>5} {n:>5} |{line}"


def diff_with_gutter(patch: Patch, file: FileDiff | None = None) -> list[str]:
    """Number every line of a parsed diff (or of one file of it) with the pre/post line numbers
    the parser gave it; headers and lines outside hunks get empty gutters."""
    numbers = {
        ln.raw: (ln.old_no, ln.new_no)
        for f in (patch.files if file is None else (file,))
        for h in f.hunks
        for ln in h.lines
    }
    first, end = (0, len(patch.lines)) if file is None else (file.start, file.end)
    hidden = _binary_bodies(patch, patch.files if file is None else (file,))
    rows, i = [], first
    while i < end:
        if i in hidden:
            # A binary file's encoded data is not code: the grader reads that it changed.
            n = hidden[i] - i
            rows.append(gutter(None, None, f"[binary data, {n} encoded lines: not shown]"))
            i = hidden[i]
            continue
        rows.append(gutter(*numbers.get(i, (None, None)), patch.lines[i]))
        i += 1
    return rows


def _binary_bodies(patch: Patch, files: tuple[FileDiff, ...]) -> dict[int, int]:
    """First line -> end of each binary file's `GIT binary patch` data (literal/delta blocks)."""
    bodies = {}
    for f in files:
        if not f.is_binary:
            continue
        marker = next(
            (i for i in range(f.start, f.end) if patch.lines[i].startswith("GIT binary patch")),
            None,
        )
        if marker is not None and marker + 1 < f.end:
            bodies[marker + 1] = f.end
    return bodies


def _file_state(fd: FileDiff) -> str:
    size = f"+{fd.lines_added}/-{fd.lines_removed}"
    if fd.is_new:
        return f"creates it, {size}"
    if fd.is_deleted:
        return f"deletes it, {size}"
    if fd.old_path != fd.new_path:
        return f"renames it from {fd.old_path}, {size}"
    return size


def _block_rows(block: Block, who: str) -> list[str]:
    where = f"base line {block.base_start}"
    if (post := block.post_lines) is not None:
        first, last = post
        where += f", {who}'s line {first}" if first == last else f", {who}'s lines {first}-{last}"
    return [f"only {who} at {where}:"] + [f"  {ln.kind}{ln.content}" for ln in block.lines]


def comparison_rows(files: list[FileComparison], a: str, b: str) -> list[tuple[str, str]]:
    """Rows of a candidate compare: per file one line saying how the two differ, then the
    changed lines only one of them makes, in base order (the other's changes at the same base
    line follow at once, so they read side by side). Shared lines are counted, not repeated.
    Each row comes with the path of its file, so a page that starts mid-file can say where."""
    out: list[tuple[str, str]] = []
    for fc in files:
        rows: list[str] = []
        if fc.a is None or fc.b is None:
            who, fd = (a, fc.a) if fc.a is not None else (b, fc.b)
            assert fd is not None
            rows.append(f"== {fc.path}: only {who} changes it ({_file_state(fd)})")
        elif fc.identical:
            rows.append(f"== {fc.path}: the same change in both ({_file_state(fc.a)})")
        elif fc.binary_same is not None:
            rows.append(f"== {fc.path}: binary, changed differently by {a} and {b}")
        else:
            rows.append(
                f"== {fc.path}: {a} {_file_state(fc.a)}; {b} {_file_state(fc.b)}; changed lines: "
                f"{fc.count('shared')} in both, {fc.count('only_a')} only in {a}, "
                f"{fc.count('only_b')} only in {b}"
            )
        blocks = [(blk.base_start, 0, blk) for blk in fc.only_a]
        blocks += [(blk.base_start, 1, blk) for blk in fc.only_b]
        for _, side, blk in sorted(blocks, key=lambda t: (t[0], t[1])):
            rows += _block_rows(blk, b if side else a)
        out += [(fc.path, r) for r in rows]
    return out


def compact_json(value: Mapping[str, Any] | list[Any]) -> str:
    return json.dumps(value, ensure_ascii=False, default=str, sort_keys=True, indent=1)
