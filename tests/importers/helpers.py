"""Builders for bundle lines used by the importer tests."""

from __future__ import annotations

import json
import tracemalloc
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

PATCH = (
    "diff --git a/pkg/sizes.py b/pkg/sizes.py\n"
    "--- a/pkg/sizes.py\n"
    "+++ b/pkg/sizes.py\n"
    "@@ -1,3 +1,3 @@\n"
    " def f(n):\n"
    "-    return n > 1\n"
    "+    return n >= 1\n"
    " \n"
)


def attempt(id: str = "a1", **overrides: Any) -> dict[str, Any]:
    value: dict[str, Any] = {
        "id": id,
        "status": "valid",
        "test_reward": 1.0,
        "test_report": {"FAIL_TO_PASS": {"success": ["t1"], "failure": []}},
        "test_output": "1 passed\n",
        "patch": PATCH,
        "trajectory": {
            "format": "native",
            "events": [
                {"kind": "thought", "role": "assistant", "text": "look at sizes"},
                {
                    "kind": "action",
                    "role": "assistant",
                    "text": "",
                    "tool": "bash",
                    "args": "cat pkg/sizes.py",
                },
                {"kind": "observation", "role": "tool", "text": "def f(n): ...", "tool": "bash"},
            ],
        },
        "num_turns": 2,
        "tokens_in": 1000,
        "tokens_out": 100,
        "agent": {"system": "loop-a", "model": "model-x", "family": "loop"},
    }
    value.update(overrides)
    return value


def group(
    task_id: str = "t-1", run: str = "run-1", step: int = 0, **overrides: Any
) -> dict[str, Any]:
    value: dict[str, Any] = {
        "schema": "gagar.group.v1",
        "run": run,
        "step": step,
        "task": {
            "id": task_id,
            "repo": "acme/pkg",
            "base_commit": "abc123",
            "problem_statement": "f(1) is wrong",
            "fail_to_pass": ["t1"],
            "pass_to_pass": [],
        },
        "attempts": [attempt("a1"), attempt("a2", test_reward=0.0, patch=None)],
    }
    value.update(overrides)
    return value


def jsonl(*groups: dict[str, Any]) -> bytes:
    return b"".join(json.dumps(g).encode() + b"\n" for g in groups)


@dataclass
class Traced:
    peak: int = 0  # bytes, once the block has ended


@contextmanager
def traced_memory() -> Iterator[Traced]:
    """The peak of Python allocations made inside the block (`tracemalloc`)."""
    traced = Traced()
    tracemalloc.start()
    try:
        yield traced
        traced.peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
