"""The importers' shared fixture: four real SWE-bench instances in the harness's shapes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.importers.swebench_files import by_system, load_rows, write_tasks

SYSTEM = "moatless/20240623_moatless_claude-3.5-sonnet"


@pytest.fixture
def real(shared_data: Path, tmp_path: Path) -> dict[str, Any]:
    """Four real instances, the tasks file, and one system's candidates for them."""
    rows = load_rows(shared_data)[:4]
    entries = by_system(rows)[SYSTEM]
    return {
        "rows": rows,
        "entries": entries,
        "ids": [row["instance_id"] for row, _ in entries],
        "resolved": [row["instance_id"] for row, c in entries if c["resolved"]],
        "tasks": str(write_tasks(rows, tmp_path / "tasks.jsonl")),
    }
