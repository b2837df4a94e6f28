"""The grader's read-only tools over one group, with a log of every call.

Every piece of content that came from a candidate, the task or the tests is wrapped by
`tool_output.untrusted`; the text outside the wrapper is ours. Output is capped per call.
"""

from __future__ import annotations

import random
import string
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

from jsonschema import Draft202012Validator

from grading.diffs import Patch, compare_patches, parse_patch
from grading.domain.redaction import build_redactor
from grading.domain.wording import plural
from grading.grader import tool_output as render
from grading.grader.inputs import CandidateInput, Event, GroupInput
from grading.grader.protocol import SUBMISSION_TOOLS
from grading.grader.sandbox.base import Limits, Sandbox, SandboxError
from grading.grader.toolspecs import tool_specs
from grading.grader.tree_tools import MAX_LIST_ENTRIES, MAX_READ_LINES, grep, list_files, read_lines
from grading.grader.workspace import BASE, PathRefused, Workspace

LOG_OUTPUT_CAP = 4_000  # what the tool log keeps of each result


class ToolError(Exception):
    """A tool call the model can fix (bad alias, missing file); sent back as an error result."""


@dataclass
class ToolLogEntry:
    index: int
    name: str
    arguments: Any
    output: str
    duration_s: float
    is_error: bool = False
    command: str | None = None
    tree: str | None = None
    exit_code: int | None = None

    def as_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass
class ToolResult:
    content: str
    is_error: bool
    entry: ToolLogEntry


def make_aliases(n: int) -> list[str]:
    letters = string.ascii_uppercase
    return [letters[i] if i < 26 else letters[i // 26 - 1] + letters[i % 26] for i in range(n)]


def assign_aliases(candidates: Sequence[CandidateInput], seed: int) -> dict[str, CandidateInput]:
    """alias -> candidate, shuffled by the run's seed so that position carries no signal."""
    order = list(candidates)
    random.Random(seed).shuffle(order)
    return dict(zip(make_aliases(len(order)), order, strict=True))


def trajectory_redactor(group: GroupInput) -> Callable[[Event], Event]:
    """The shared redactor over every string of an event (keys included): the agent's own
    system prompt ("You are <model>…"), its signatures and its names never reach the grader,
    as they never reach a reviewer."""
    redactor = build_redactor(group.identity_names, group.identity_patterns)

    def redact(event: Event) -> Event:
        return cast(Event, redactor.redact_obj(dict(event)))

    return redact


@dataclass
class Toolbox:
    group: GroupInput
    candidates: Mapping[str, CandidateInput]  # alias -> candidate
    workspace: Workspace | None = None
    sandbox: Sandbox | None = None
    limits: Limits = field(default_factory=Limits)
    output_cap: int = render.OUTPUT_CAP
    log: list[ToolLogEntry] = field(default_factory=list)
    # The shared pure redactor (run_grader passes `trajectory_redactor(group)`): every
    # trajectory event the grader sees or searches passes through `_redacted` and so this.
    redact_event: Callable[[Event], Event] | None = None

    def __post_init__(self) -> None:
        self.diffs: dict[str, Patch] = {a: parse_patch(c.patch) for a, c in self.candidates.items()}
        self._validators = {
            s.name: Draft202012Validator(s.parameters)
            for s in tool_specs(with_sandbox=self.sandbox is not None, sandbox=self.sandbox)
        }

    # -- dispatch ---------------------------------------------------------------------------

    def call(self, name: str, arguments: Any) -> ToolResult:
        started = time.monotonic()
        entry = ToolLogEntry(len(self.log), name, arguments, "", 0.0)
        try:
            content = self._dispatch(name, arguments, entry)
        except (ToolError, PathRefused) as exc:
            content, entry.is_error = f"error: {exc}", True
        except KeyError as exc:
            content, entry.is_error = f"error: unknown tree or candidate {exc}", True
        entry.duration_s = round(time.monotonic() - started, 4)
        entry.output = content[:LOG_OUTPUT_CAP]
        self.log.append(entry)
        return ToolResult(content, entry.is_error, entry)

    def record(self, name: str, arguments: Any, output: str, *, is_error: bool) -> ToolLogEntry:
        """Log a call handled outside the toolbox (the submission tools)."""
        entry = ToolLogEntry(len(self.log), name, arguments, output[:LOG_OUTPUT_CAP], 0.0, is_error)
        self.log.append(entry)
        return entry

    def _dispatch(self, name: str, args: Any, entry: ToolLogEntry) -> str:
        validator = self._validators.get(name)
        if validator is None or name in SUBMISSION_TOOLS:
            raise ToolError(f"no tool named {name!r}")
        errors = [e.message for e in validator.iter_errors(args)]
        if errors:
            raise ToolError("invalid arguments: " + "; ".join(errors[:5]))
        handler = getattr(self, f"_t_{name}")
        result: str = handler(entry=entry, **args)
        return result

    def _cand(self, alias: str) -> CandidateInput:
        if alias not in self.candidates:
            raise ToolError(f"no candidate {alias!r}; aliases are {', '.join(self.candidates)}")
        return self.candidates[alias]

    def _tree(self, name: str) -> Any:
        if self.workspace is None:
            raise ToolError("the repository is not available for this group")
        if name != BASE:
            self._cand(name)
            if name in self.workspace.apply_errors:
                raise ToolError(f"candidate {name}'s patch does not apply; only its diff exists")
        return self.workspace.tree(name)

    def _wrap(self, source: str, text: str, *, head_tail: bool = False) -> str:
        body, note = (render.cap_head_tail if head_tail else render.cap)(text, self.output_cap)
        return render.untrusted(source, body) + (f"\n{note}" if note else "")

    # -- tools ------------------------------------------------------------------------------

    def _t_list_candidates(self, *, entry: ToolLogEntry) -> str:
        lines, files, notes = [], [], []
        for alias, cand in self.candidates.items():
            d = self.diffs[alias]
            apply = self.workspace.apply_errors.get(alias) if self.workspace else None
            lines.append(
                f"{alias}: {'passed' if cand.passed else 'failed'}, status={cand.status}, "
                f"files={len(d.files)}, +{d.lines_added}/-{d.lines_removed}, "
                f"hunks={d.hunk_count}, "
                f"turns={cand.num_turns if cand.num_turns is not None else '?'}, "
                f"tokens={cand.tokens if cand.tokens is not None else '?'}, "
                f"events={cand.event_count()}" + (", patch does not apply" if apply else "")
            )
            files.append(f"{alias}: " + ", ".join(d.paths))
            if note := render.mixed_script_note(alias, d):
                notes.append(note)
        out = "\n".join(lines) + "\n" + self._wrap("files touched", "\n".join(files))
        return out + "".join(f"\n{n}" for n in notes)

    def _lines(self, source: str, items: list[str], first: int, total: int, unit: str) -> str:
        """Whole items within the output cap, then a trusted note with the exact range shown
        and where to continue."""
        n = render.fit(items, self.output_cap)
        shown = [render.clip_line(i, self.output_cap) for i in items[:n]]
        body = render.untrusted(source, "\n".join(shown))
        last = first + n - 1
        if n < len(items) or last < total:
            note = f"\n[{unit} {first}-{last} of {total} shown; continue at {unit} {last + 1}]"
            return body + note
        return body

    def _t_list_files(
        self, *, tree: str, path: str = "", depth: int = 2, entry: ToolLogEntry
    ) -> str:
        names = list_files(self._tree(tree), path, depth)
        more = len(names) > MAX_LIST_ENTRIES
        names = names[:MAX_LIST_ENTRIES]
        n = render.fit(names, self.output_cap)
        body = render.untrusted(f"{tree} tree listing", "\n".join(names[:n]))
        if n < len(names) or more:
            body += (
                f"\n[entries 1-{n} of {len(names)}{'+' if more else ''} shown; list a "
                "subdirectory (path) or a smaller depth to see the rest]"
            )
        return body

    def _t_read_file(
        self, *, tree: str, path: str, start: int = 1, end: int = 0, entry: ToolLogEntry
    ) -> str:
        lines = read_lines(self._tree(tree), path)
        start = max(start, 1)
        last = min(len(lines), end if end >= start else len(lines), start + MAX_READ_LINES - 1)
        rows = render.numbered(lines[start - 1 : last], start).split("\n") if last >= start else []
        n = render.fit(rows, self.output_cap) if rows else 0
        shown_last = start + n - 1 if n else start - 1
        header = f"{path}: lines {start}-{shown_last} of {len(lines)}"
        body = render.untrusted(f"{tree} tree {path}", "\n".join(rows[:n]))
        if shown_last < last or (end == 0 and shown_last < len(lines)):
            body += f"\n[continue at line {shown_last + 1}: call again with start={shown_last + 1}]"
        return header + "\n" + body

    def _t_grep(
        self,
        *,
        tree: str,
        pattern: str,
        path: str = "",
        max_results: int = 50,
        skip: int = 0,
        entry: ToolLogEntry,
    ) -> str:
        hits, more = grep(self._tree(tree), pattern, path, skip + max_results)
        hits = hits[skip:]
        if not hits:
            return render.untrusted(f"{tree} tree search", "(no matches)")
        n = render.fit(hits, self.output_cap)
        body = render.untrusted(f"{tree} tree search", "\n".join(hits[:n]))
        if n < len(hits) or more:
            body += (
                f"\n[stopped at {skip + n} results] results {skip + 1}-{skip + n} are shown; "
                f"continue with skip={skip + n}, or narrow the path or pattern."
            )
        return body

    def _t_view_diff(
        self, *, candidate: str, file: str | None = None, start: int = 1, entry: ToolLogEntry
    ) -> str:
        self._cand(candidate)
        patch, one = self.diffs[candidate], None
        if file is not None:
            one = patch.find(file)
            if one is None:
                raise ToolError(f"candidate {candidate}'s diff does not touch {file!r}")
        head = f"diff of candidate {candidate} (columns: pre line, post line | diff line)"
        lines = render.diff_with_gutter(patch, one)
        return self._paged_diff(head, f"candidate {candidate} diff", lines, start)

    def _t_view_reference_patch(self, *, start: int = 1, entry: ToolLogEntry) -> str:
        patch = self.group.task.reference_patch
        if not patch.strip():
            return "This task has no reference solution."
        head = (
            "reference solution: the maintainers' fix for this task. Reference material, not a "
            "candidate (columns: pre line, post line | diff line)"
        )
        lines = render.diff_with_gutter(parse_patch(patch))
        return self._paged_diff(head, render.REFERENCE_SOURCE, lines, start)

    def _paged_diff(self, head: str, source: str, lines: list[str], start: int) -> str:
        shown: list[str] = []
        size = 0
        for line in lines[start - 1 :]:
            if size + len(line) + 1 > self.output_cap and shown:
                break
            shown.append(line)
            size += len(line) + 1
        note = ""
        last = start - 1 + len(shown)
        if last < len(lines):
            note = (
                f"\n[truncated: diff lines {start}-{last} of {len(lines)}; "
                f"call again with start={last + 1}]"
            )
        return head + "\n" + render.untrusted(source, "\n".join(shown)) + note

    def _t_compare_diffs(self, *, a: str, b: str, entry: ToolLogEntry) -> str:
        self._cand(a), self._cand(b)
        rows = []
        for fc in sorted(compare_patches(self.diffs[a], self.diffs[b]), key=lambda c: c.path):
            fa, fb = fc.a, fc.b
            sa = f"+{fa.lines_added}/-{fa.lines_removed}" if fa else "-"
            sb = f"+{fb.lines_added}/-{fb.lines_removed}" if fb else "-"
            rows.append(f"{fc.path}: {a} {sa} | {b} {sb}{' identical' if fc.identical else ''}")
        return f"compare {a} vs {b} (per file: added/removed lines)\n" + self._wrap(
            f"candidates {a} and {b} file list", "\n".join(rows)
        )

    def _t_compare_candidates(
        self, *, a: str, b: str, file: str | None = None, start: int = 1, entry: ToolLogEntry
    ) -> str:
        self._cand(a), self._cand(b)
        if a == b:
            raise ToolError("name two different candidates")
        files = compare_patches(self.diffs[a], self.diffs[b])
        if file is not None:
            files = [
                fc for fc in files
                if file == fc.path or file in {f.old_path for f in (fc.a, fc.b) if f is not None}
            ]  # fmt: skip
            if not files:
                raise ToolError(f"neither {a} nor {b} changes {file!r}")
        rows = render.comparison_rows(files, a, b)
        if not rows:
            return f"compare {a} vs {b}: neither changes any file."
        if start > len(rows):
            raise ToolError(f"start={start} is past the last row ({len(rows)})")
        n = render.fit([r for _, r in rows[start - 1 :]], self.output_cap)
        last = start + n - 1
        first_path, first_row = rows[start - 1]
        same = sum(fc.identical for fc in files)
        head = (
            f"compare {a} vs {b}: {plural(len(files), 'file')}, {same} changed the same way by "
            "both; "
            f"rows {start}-{last} of {len(rows)}. Per file, the changed lines only one of them "
            "makes (-: removes that base line, +: adds a line before it; a candidate's lines "
            "are its post-patch line numbers, usable as post-side evidence)."
        )
        if not first_row.startswith("== "):
            head += " The page starts inside a file; its path is the first line below."
        body = render.untrusted(
            f"candidates {a} and {b} compared",
            "\n".join(
                ([f"(continuing {first_path})"] if not first_row.startswith("== ") else [])
                + [render.clip_line(r, self.output_cap) for _, r in rows[start - 1 : last]]
            ),
        )
        if last < len(rows):
            body += (
                f"\n[truncated: rows {start}-{last} of {len(rows)}; "
                f"call again with start={last + 1}]"
            )
        return head + "\n" + body

    def _redacted(self, event: Event) -> Event:
        """The one place trajectory events pass before the grader sees or searches them."""
        return self.redact_event(event) if self.redact_event is not None else event

    def _t_view_trajectory(
        self, *, candidate: str, start: int = 0, count: int = 20, entry: ToolLogEntry
    ) -> str:
        cand = self._cand(candidate)
        events = cand.event_slice(start, count)
        total = cand.event_count()
        rows = [render.render_event(start + i, self._redacted(e)) for i, e in enumerate(events)]
        n = render.fit(rows, self.output_cap)
        last = start + n - 1
        head = f"trajectory of {candidate}: events {start}-{last} of {total}"
        body = render.untrusted(
            f"candidate {candidate} trajectory",
            "\n".join(render.clip_line(r, self.output_cap) for r in rows[:n]),
        )
        if last + 1 < total:
            body += f"\n[continue at event {last + 1}: call again with start={last + 1}]"
        return head + "\n" + body

    def _t_search_trajectory(
        self,
        *,
        candidate: str,
        query: str,
        max_results: int = 20,
        start: int = 0,
        entry: ToolLogEntry,
    ) -> str:
        cand, q = self._cand(candidate), query.lower()
        hits: list[tuple[int, str]] = []
        next_start: int | None = None
        for i, event in cand.iter_events():
            if i < start:
                continue
            event = self._redacted(event)
            kind = render.event_kind(event).lower()
            error = q == "error" and render.is_error_event(event)
            if kind == q or error or q in render.event_text(event, 100_000).lower():
                if len(hits) >= max_results:
                    next_start = i
                    break
                hits.append((i, render.render_event(i, event)))
        n = render.fit([h for _, h in hits], self.output_cap)
        if n < len(hits):
            next_start = hits[n][0]
        head = f"{n} matching events in {candidate}'s trajectory (max {max_results})"
        body = render.untrusted(
            f"candidate {candidate} trajectory search",
            "\n".join(render.clip_line(h, self.output_cap) for _, h in hits[:n]),
        )
        if next_start is not None:
            body += f"\n[more matches from event {next_start}: call again with start={next_start}]"
        return head + "\n" + body

    def _t_view_test_results(
        self, *, candidate: str, start_line: int = 0, entry: ToolLogEntry
    ) -> str:
        cand = self._cand(candidate)
        outcome = "passed" if cand.passed else "failed"
        head = f"candidate {candidate}: tests {outcome}, status={cand.status}"
        report = render.compact_json(dict(cand.test_report)) if cand.test_report else "(no report)"
        source = f"candidate {candidate} test output"
        if start_line:
            lines = cand.test_output.splitlines()
            output = self._lines(source, lines[start_line - 1 :], start_line, len(lines), "line")
        else:
            output = self._wrap(source, cand.test_output, head_tail=True)
            if len(cand.test_output) > self.output_cap:
                half = self.output_cap // 2
                first = cand.test_output[:half].count("\n") + 1
                last = cand.test_output.count("\n") - cand.test_output[-half:].count("\n") + 1
                output += (
                    f" The middle (lines {first}-{last}) is omitted: call again with "
                    f"start_line={first} to read it."
                )
        report_part = self._wrap(f"candidate {candidate} test report", report)
        return head + "\n" + report_part + "\n" + output

    def _t_run_check(self, *, tree: str, command: str, entry: ToolLogEntry) -> str:
        if self.sandbox is None or self.workspace is None:
            raise ToolError("no sandbox is configured for this run")
        self._tree(tree)  # refuses unknown trees before anything is copied
        entry.command, entry.tree = command, tree
        try:
            # A check may write files; it runs on a copy so later reads see the tree as submitted.
            with self.workspace.scratch_copy(tree) as workdir:
                res = self.sandbox.run(command, workdir, self.limits)
        except SandboxError as exc:
            raise ToolError(f"sandbox unavailable: {exc}") from exc
        entry.exit_code = res.exit_code
        head = f"exit code: {res.exit_code}" + (" (timed out)" if res.timed_out else "")
        head += f", {res.duration_s:.1f}s" + (
            ", output truncated by sandbox" if res.truncated else ""
        )
        out = self._wrap(f"check output in {tree}", res.output, head_tail=True)
        if len(res.output) > self.output_cap:
            out += " To see the omitted middle, run a narrower command (e.g. pipe through tail)."
        return head + "\n" + out
