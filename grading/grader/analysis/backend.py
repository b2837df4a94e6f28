"""The analysis grader as a Backend: the same agent loop, tools and verdict protocol as a model.

Turn by turn it asks for what the engine needs — `list_candidates`, every passing candidate's
diff, the reference patch when the prompt offers one, and (with the repository) the base version
of every changed Python file and the repository's lint configuration — then grades the group with
`analyse_group` and sends the verdict as the protocol's `grade_candidate` calls and the
`submit_ranking` (`protocol.verdict_to_turns`). The loop checks every grade like a model's, so
every negative judgement cites lines of a candidate's diff that the service resolves.

Only the trusted text around the tool results decides which calls it makes (aliases, paging
notes); what is inside the untrusted blocks is only ever parsed as diffs and files, and the
engine only counts text against a candidate. When the final phase forces a submission
(`options.tool_choice`), it grades with what it has read so far: a candidate whose diff it never
saw has no readable patch and is ranked last in T3.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from grading.diffs import parse_patch as parse
from grading.grader.analysis.engine import GroupResult, analyse_group
from grading.grader.analysis.inputs import AnalysisInput, CandidatePatch
from grading.grader.analysis.model import Fit, load_default_fit
from grading.grader.analysis.paths import CONFIG_FILES
from grading.grader.analysis.verdict import to_verdict
from grading.grader.backends.base import CallOptions, Completion, Message, ToolCall, ToolSpec
from grading.grader.conversation import (
    NEXT_DIFF_PAGE,
    NEXT_FILE_PAGE,
    Conversation,
    blocks,
    call_key,
    diff_text,
    file_text,
    read_conversation,
    trusted,
)
from grading.grader.protocol import verdict_to_turns

Call = tuple[str, dict[str, Any]]


class AnalysisBackend:
    name = "analysis"

    def __init__(self, fit: Fit | None = None) -> None:
        self.fit = fit or load_default_fit()
        self.model = f"analysis:{self.fit.version}"
        self._n = 0
        self._memory: dict[str, str] = {}
        self.result: GroupResult | None = None  # the last group graded, for callers that log it

    def complete(
        self,
        messages: Sequence[Message],
        tools: Sequence[ToolSpec],
        *,
        max_output_tokens: int,
        temperature: float,
        seed: int | None,
        options: CallOptions = CallOptions(),  # noqa: B008 (frozen, never mutated)
    ) -> Completion:
        conv = read_conversation(messages, self._memory)
        final = options.tool_choice != "auto"
        calls = [] if final else self._next_calls(conv)[: options.max_tool_calls or None]
        if not calls:
            (calls,) = verdict_to_turns(self._verdict(conv), per_turn=10_000)
        tool_calls = []
        for name, args in calls:
            self._n += 1
            tool_calls.append(ToolCall(id=f"a{self._n}", name=name, arguments=args))
        return Completion(Message("assistant", "", tuple(tool_calls)), 0, 0, 0.0, "tool_use")

    # -- what to read ------------------------------------------------------------------------

    def _next_calls(self, conv: Conversation) -> list[Call]:
        asked = conv.asked
        listing = _listing(conv)
        if listing is None:
            return [] if call_key("list_candidates", {}) in asked else [("list_candidates", {})]
        todo: list[Call] = [("view_diff", {"candidate": a}) for a in conv.passing]
        todo += _next_pages(conv, "view_diff", NEXT_DIFF_PAGE)
        if "view_reference_patch" in trusted(conv.user_text):
            todo.append(("view_reference_patch", {}))
            todo += _next_pages(conv, "view_reference_patch", NEXT_DIFF_PAGE)
        if conv.has_repo and _diffs_read(conv):
            todo += [
                ("read_file", {"tree": "base", "path": p})
                for p in (*CONFIG_FILES, *sorted(_base_paths(conv)))
            ]
            todo += _next_pages(conv, "read_file", NEXT_FILE_PAGE, keep=("tree", "path"))
        return [c for c in todo if call_key(*c) not in asked]

    # -- the verdict -------------------------------------------------------------------------

    def _verdict(self, conv: Conversation) -> dict[str, Any]:
        passing = conv.passing
        candidates = [CandidatePatch(a, _diff(conv, "view_diff", candidate=a)) for a in passing]
        reference = _diff(conv, "view_reference_patch") or None
        base = _base_files(conv) if conv.has_repo else None
        test_names = [
            name
            for source in ("FAIL_TO_PASS", "PASS_TO_PASS")
            for block in blocks(conv.user_text, source)
            for name in block.split("\n")
            if name.strip()
        ]
        inp = AnalysisInput(
            candidates=candidates,
            reference_patch=reference,
            problem_statement="\n".join(blocks(conv.user_text, "problem statement")),
            test_patch="\n".join(blocks(conv.user_text, "test patch")),
            test_names=test_names,
            read_base=base.get if base is not None else None,
        )
        self.result = analyse_group(inp, self.fit)
        return to_verdict(self.result, {a: a for a in passing})


def _listing(conv: Conversation) -> str | None:
    return next((c for _, c in conv.outputs("list_candidates")), None)


def _pages(conv: Conversation, name: str, **match: Any) -> list[str]:
    """A paged tool's results for one target (whole, not one file of it), first page first;
    a page asked twice (its first answer was stubbed) counts once."""
    outs = {int(a.get("start", 1)): c for a, c in conv.outputs(name, **match) if "file" not in a}
    return [outs[start] for start in sorted(outs)]


def _diff(conv: Conversation, name: str, **match: Any) -> str:
    return diff_text(_pages(conv, name, **match))


def _next_pages(conv: Conversation, name: str, note: Any, keep: tuple[str, ...] = ()) -> list[Call]:
    out: list[Call] = []
    for args, content in conv.outputs(name):
        m = note.search(trusted(content))
        if m:
            base = {k: args[k] for k in (*keep, "candidate") if k in args}
            out.append((name, {**base, "start": int(m.group(1))}))
    return out


def _diffs_read(conv: Conversation) -> bool:
    """Every passing diff has been read to its end (the changed paths are known)."""
    for alias in conv.passing:
        pages = conv.outputs("view_diff", candidate=alias)
        if not pages or any(
            NEXT_DIFF_PAGE.search(trusted(c))
            and call_key("view_diff", {"candidate": alias, "start": _next(c)}) not in conv.asked
            for _, c in pages
        ):
            return False
    return True


def _next(page: str) -> int:
    m = NEXT_DIFF_PAGE.search(trusted(page))
    return int(m.group(1)) if m else 0


def _base_paths(conv: Conversation) -> set[str]:
    """The base version of every Python file a passing candidate changes (not files it adds)."""
    paths: set[str] = set()
    for alias in conv.passing:
        for fp in parse(_diff(conv, "view_diff", candidate=alias)).files:
            if fp.old_path is not None and fp.old_path.endswith(".py"):
                paths.add(fp.old_path)
    return paths


def _base_files(conv: Conversation) -> dict[str, str]:
    """Base files read whole; a file with a page missing or an error is left out (the engine
    then works from the hunks, as without a repository)."""
    by_path: dict[str, list[str]] = {}
    for args, content in conv.outputs("read_file", tree="base"):
        by_path.setdefault(str(args.get("path")), []).append(content)
    out = {}
    for path in by_path:
        text = file_text(_pages(conv, "read_file", tree="base", path=path))
        if text is not None:
            out[path] = text
    return out
