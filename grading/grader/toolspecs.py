"""Argument schemas of the grader's tools (what the model sees).

Every run offers the same list in the same order (exploration tools, then the two submission tools
of `grading.grader.protocol`), so the tool block of the request never changes and stays cached.
"""

from __future__ import annotations

from typing import Any

from grading.grader.backends.base import ToolSpec
from grading.grader.protocol import submission_specs
from grading.grader.sandbox.base import Sandbox


def _obj(required: list[str], **props: Any) -> dict[str, Any]:
    return {
        "type": "object",
        "required": required,
        "properties": props,
        "additionalProperties": False,
    }


_TREE = {"type": "string", "description": '"base" or a candidate alias (A, B, …)'}
_ALIAS = {"type": "string", "description": "a candidate alias (A, B, …)"}
_INT = {"type": "integer", "minimum": 0}

_SPECS = [
    ToolSpec(
        "list_candidates",
        "List the anonymized candidates with test status and diff size.",
        _obj([]),
    ),
    ToolSpec(
        "list_files",
        "List files and directories of a tree, up to `depth` levels below `path`.",
        _obj(
            ["tree"],
            tree=_TREE,
            path={"type": "string"},
            depth={"type": "integer", "minimum": 1, "maximum": 4},
        ),
    ),
    ToolSpec(
        "read_file",
        "Read a file of a tree with line numbers (at most 400 lines per call). The header gives "
        "the exact lines shown; a cut says where to continue.",
        _obj(["tree", "path"], tree=_TREE, path={"type": "string"}, start=_INT, end=_INT),
    ),
    ToolSpec(
        "grep",
        "Search a tree for a regular expression; returns path:line: text. Page with skip.",
        _obj(
            ["tree", "pattern"],
            tree=_TREE,
            pattern={"type": "string", "minLength": 1},
            path={"type": "string"},
            max_results={"type": "integer", "minimum": 1, "maximum": 200},
            skip=_INT,
        ),
    ),
    ToolSpec(
        "view_diff",
        "Show a candidate's diff with pre/post line numbers; optionally one file; page with start.",
        _obj(
            ["candidate"],
            candidate=_ALIAS,
            file={"type": "string"},
            start={"type": "integer", "minimum": 1},
        ),
    ),
    ToolSpec(
        "compare_diffs",
        "Compare two candidates' diffs file by file (added/removed lines per file, identical "
        "files marked).",
        _obj(["a", "b"], a=_ALIAS, b=_ALIAS),
    ),
    ToolSpec(
        "compare_candidates",
        "Compare two candidates side by side: per file, the changed lines only one of them makes "
        "(placed on the base file's line numbers, with each candidate's own post-patch line "
        "numbers) and how many both make; optionally one file; page with start.",
        _obj(
            ["a", "b"],
            a=_ALIAS,
            b=_ALIAS,
            file={"type": "string"},
            start={"type": "integer", "minimum": 1},
        ),
    ),
    ToolSpec(
        "view_trajectory",
        "Show events of a candidate's trajectory (at most 50 per call); the header gives the "
        "exact events shown and a cut says where to continue.",
        _obj(
            ["candidate"],
            candidate=_ALIAS,
            start=_INT,
            count={"type": "integer", "minimum": 1, "maximum": 50},
        ),
    ),
    ToolSpec(
        "search_trajectory",
        'Find trajectory events whose kind equals or whose text contains `query` ("error" also '
        "finds failed commands); start = the first event index to search from.",
        _obj(
            ["candidate", "query"],
            candidate=_ALIAS,
            query={"type": "string", "minLength": 1},
            max_results={"type": "integer", "minimum": 1, "maximum": 100},
            start=_INT,
        ),
    ),
    ToolSpec(
        "view_test_results",
        "Show a candidate's test report and test output (long output: head and tail, or the "
        "lines from start_line).",
        _obj(["candidate"], candidate=_ALIAS, start_line={"type": "integer", "minimum": 1}),
    ),
    ToolSpec(
        "view_reference_patch",
        "Show the task's reference solution (the maintainers' fix), with pre/post line numbers. "
        "Reference material, not a candidate: never rank it; a candidate may fix the problem "
        "another way and still be best.",
        _obj([], start={"type": "integer", "minimum": 1}),
    ),
]

RUN_CHECK = "run_check"


def run_check_spec(sandbox: Sandbox | None) -> ToolSpec:
    where = sandbox.describe() if sandbox is not None and hasattr(sandbox, "describe") else ""
    return ToolSpec(
        RUN_CHECK,
        "Run a shell command in a sandboxed scratch copy of a tree (no network, time/memory "
        "limits; changes are thrown away). " + (where or "The sandbox's contents are unknown."),
        _obj(["tree", "command"], tree=_TREE, command={"type": "string", "minLength": 1}),
    )


def tool_specs(*, with_sandbox: bool, sandbox: Sandbox | None = None) -> list[ToolSpec]:
    specs = list(_SPECS)
    if with_sandbox:
        specs.append(run_check_spec(sandbox))
    return [*specs, *submission_specs()]
