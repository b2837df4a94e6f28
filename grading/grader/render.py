"""Rendering of tool output: untrusted-content delimiters, size caps, line numbers, events."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

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


def diff_with_gutter(patch: str) -> list[str]:
    """Number every line of a unified diff; headers get empty gutters."""
    out: list[str] = []
    old = new = 0
    in_hunk = False
    hunk = re.compile(r"^@@ -(\d+)(?:,\d+)? \+(\d+)(?:,\d+)? @@")
    for line in patch.splitlines():
        m = hunk.match(line)
        if m:
            old, new, in_hunk = int(m.group(1)), int(m.group(2)), True
            out.append(gutter(None, None, line))
        elif line.startswith("diff --git"):
            in_hunk = False
            out.append(gutter(None, None, line))
        elif in_hunk and line.startswith("+"):
            out.append(gutter(None, new, line))
            new += 1
        elif in_hunk and line.startswith("-"):
            out.append(gutter(old, None, line))
            old += 1
        elif in_hunk and (line.startswith(" ") or line == ""):
            out.append(gutter(old, new, line))
            old += 1
            new += 1
        else:
            out.append(gutter(None, None, line))
    return out


def split_file_diffs(patch: str) -> dict[str, str]:
    """The patch cut into per-file chunks, keyed by post path (pre path for deletions)."""
    chunks: dict[str, str] = {}
    current: list[str] = []

    def flush() -> None:
        if not current:
            return
        path = ""
        for line in current:
            if line.startswith("@@"):
                break
            if line.startswith("+++ ") and line[4:].strip() != "/dev/null":
                path = line[4:].strip().removeprefix("b/")
            elif line.startswith("--- ") and not path:
                path = line[4:].strip().removeprefix("a/")
        chunks[path] = "\n".join(current) + "\n"

    for line in patch.splitlines():
        if line.startswith("diff --git") and current:
            flush()
            current = []
        current.append(line)
    flush()
    return chunks


def compact_json(value: Mapping[str, Any] | list[Any]) -> str:
    return json.dumps(value, ensure_ascii=False, default=str, sort_keys=True, indent=1)
