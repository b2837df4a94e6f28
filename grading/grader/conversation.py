"""Reading the grader conversation back, for deterministic backends (heuristic, analysis).

A deterministic backend sees only what a model sees: the prompt and the tool results. These
helpers take the untrusted blocks apart (`render.untrusted`), rebuild a diff from `view_diff`
pages and a file from `read_file` pages, and remember every result as first seen, because the
loop may later replace old results by stubs to save context.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from grading.grader.backends.base import Message
from grading.grader.protocol import SUBMISSION_TOOLS

BLOCK = re.compile(r'<untrusted source="([^"]*)">\n(.*?)\n</untrusted>', re.DOTALL)
CANDIDATE_LINE = re.compile(r"^([A-Z]{1,2}): (passed|failed), .*events=(\d+)", re.MULTILINE)
NEXT_DIFF_PAGE = re.compile(r"^\[truncated: .*call again with start=(\d+)\]$", re.MULTILINE)
NEXT_FILE_PAGE = re.compile(r"^\[continue at line (\d+): call again with start=\d+\]$", re.M)
GUTTER = re.compile(r"^[ \d]{5,} [ \d]{5,} \|(.*)$")
NUMBERED = re.compile(r"^ *(\d+)\t(.*)$")
EMPTY_FILE = re.compile(r"^[^\n]*: lines 1-0 of 0\n")
# Results the loop withheld (per-turn limits): not read, so ask for them again.
WITHHELD = ("not run:", "not shown:")
REPO_PRESENT = "is available as tree 'base'"
# The prompt's own line naming the candidates (`prompts.user_prompt`).
PASSING_LINE = re.compile(r"^Candidates: \d+ — passing: (.*); failing: .*\.$", re.MULTILINE)


def trusted(content: str) -> str:
    """The text outside every untrusted block: only this may steer a deterministic backend."""
    return BLOCK.sub("", content)


def blocks(content: str, source: str | None = None) -> list[str]:
    return [body for src, body in BLOCK.findall(content) if source is None or src == source]


def diff_text(pages: Iterable[str]) -> str:
    """The diff behind `view_diff` / `view_reference_patch` pages (the line-number gutter off)."""
    lines = []
    for page in pages:
        for body in blocks(page):
            lines += [m.group(1) for m in map(GUTTER.match, body.split("\n")) if m]
    return "\n".join(lines) + "\n" if lines else ""


def file_text(pages: Iterable[str]) -> str | None:
    """A file's text from its `read_file` pages, or None when a page is missing or failed."""
    rows: dict[int, str] = {}
    for page in pages:
        if page.startswith("error:"):
            return None
        if EMPTY_FILE.match(page):
            return ""
        for body in blocks(page):
            for m in map(NUMBERED.match, body.split("\n")):
                if m:
                    rows[int(m.group(1))] = m.group(2)
    if not rows or sorted(rows) != list(range(1, len(rows) + 1)):
        return None
    return "\n".join(rows[n] for n in sorted(rows)) + "\n"


def call_key(name: str, args: Mapping[str, Any]) -> tuple[str, tuple[tuple[str, Any], ...]]:
    return name, tuple(sorted(args.items()))


@dataclass
class Conversation:
    """What the conversation so far holds: the exploration calls asked and their results."""

    calls: dict[str, tuple[str, dict[str, Any]]] = field(default_factory=dict)  # id -> call
    results: list[tuple[str, dict[str, Any], str]] = field(default_factory=list)
    user_text: str = ""

    @property
    def asked(self) -> set[tuple[str, tuple[tuple[str, Any], ...]]]:
        return {call_key(n, a) for n, a in self.calls.values()}

    @property
    def has_repo(self) -> bool:
        return REPO_PRESENT in trusted(self.user_text)

    @property
    def passing(self) -> list[str]:
        """The passing aliases, as the prompt names them."""
        m = PASSING_LINE.search(trusted(self.user_text))
        if m is None or m.group(1) == "none":
            return []
        return [a.strip() for a in m.group(1).split(",") if a.strip()]

    def outputs(self, name: str, **match: Any) -> list[tuple[dict[str, Any], str]]:
        return [
            (a, c)
            for n, a, c in self.results
            if n == name and all(a.get(k) == v for k, v in match.items())
        ]


def read_conversation(messages: Sequence[Message], memory: dict[str, str]) -> Conversation:
    """`memory` (kept by the backend between calls) holds each result as first seen."""
    conv = Conversation()
    for m in messages:
        if m.role == "assistant":
            for c in m.tool_calls:
                if c.name not in SUBMISSION_TOOLS:
                    conv.calls[c.id] = (c.name, c.arguments or {})
        elif m.role == "tool" and m.tool_call_id in conv.calls:
            if m.content.startswith(WITHHELD):
                del conv.calls[m.tool_call_id]
                continue
            content = memory.setdefault(m.tool_call_id, m.content)
            name, args = conv.calls[m.tool_call_id]
            conv.results.append((name, args, content))
        elif m.role == "user" and not conv.user_text:
            conv.user_text = m.content
    return conv
