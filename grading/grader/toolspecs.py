"""Argument schemas of the grader's tools (what the model sees)."""

from __future__ import annotations

from typing import Any

from grading.grader.backends.base import ToolSpec
from grading.grader.verdict import tool_parameters


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

SUBMIT = "submit_verdict"

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
        "Read a file of a tree with line numbers (at most 400 lines per call).",
        _obj(["tree", "path"], tree=_TREE, path={"type": "string"}, start=_INT, end=_INT),
    ),
    ToolSpec(
        "grep",
        "Search a tree for a regular expression; returns path:line: text.",
        _obj(
            ["tree", "pattern"],
            tree=_TREE,
            pattern={"type": "string", "minLength": 1},
            path={"type": "string"},
            max_results={"type": "integer", "minimum": 1, "maximum": 200},
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
        "Compare two candidates' diffs file by file.",
        _obj(["a", "b"], a=_ALIAS, b=_ALIAS),
    ),
    ToolSpec(
        "view_trajectory",
        "Show events of a candidate's trajectory (at most 50 per call).",
        _obj(
            ["candidate"],
            candidate=_ALIAS,
            start=_INT,
            count={"type": "integer", "minimum": 1, "maximum": 50},
        ),
    ),
    ToolSpec(
        "search_trajectory",
        "Find trajectory events whose kind equals or whose text contains `query`.",
        _obj(
            ["candidate", "query"],
            candidate=_ALIAS,
            query={"type": "string", "minLength": 1},
            max_results={"type": "integer", "minimum": 1, "maximum": 100},
        ),
    ),
    ToolSpec(
        "view_test_results",
        "Show a candidate's test report and test output.",
        _obj(["candidate"], candidate=_ALIAS),
    ),
    ToolSpec(
        "view_reference_patch",
        "Show the task's reference solution (the maintainers' fix), with pre/post line numbers. "
        "Reference material, not a candidate: never rank it; a candidate may fix the problem "
        "another way and still be best.",
        _obj([], start={"type": "integer", "minimum": 1}),
    ),
    ToolSpec(
        "run_check",
        "Run a shell command in a sandboxed copy of a tree (no network, time/memory limits).",
        _obj(["tree", "command"], tree=_TREE, command={"type": "string", "minLength": 1}),
    ),
]


def tool_specs(*, with_sandbox: bool) -> list[ToolSpec]:
    specs = [s for s in _SPECS if with_sandbox or s.name != "run_check"]
    return [*specs, submit_spec()]


def submit_spec() -> ToolSpec:
    return ToolSpec(
        SUBMIT,
        "Submit the final gagar.verdict.v1 verdict; this ends grading.",
        tool_parameters(),
    )
