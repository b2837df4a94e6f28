"""The shared SWE-bench groups (used in place, never copied): their patches by name."""

from __future__ import annotations

import json
from pathlib import Path

GROUPS = Path(__file__).resolve().parents[2] / ".." / "shared" / "data" / "swebench-groups"
GROUPS_FILE = GROUPS / "groups.jsonl"


def swebench_patches(*, with_task_patches: bool = False) -> list[tuple[str, str]]:
    """(name, patch) of every candidate, and of each task's gold and test patch if asked;
    empty when the shared data is not on this machine."""
    if not GROUPS_FILE.exists():
        return []
    out = []
    for line in GROUPS_FILE.read_text(encoding="utf-8").splitlines():
        group = json.loads(line)
        name = group["instance_id"]
        out += [(f"{name}#{n}", c["patch"]) for n, c in enumerate(group["candidates"])]
        if with_task_patches:
            out += [(f"{name}:gold", group["gold_patch"]), (f"{name}:test", group["test_patch"])]
    return out
