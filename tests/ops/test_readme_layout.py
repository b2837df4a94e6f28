"""The README's "Where things are" tables name files and folders that exist."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _section() -> str:
    text = (ROOT / "README.md").read_text()
    return text.split("## Where things are", 1)[1].split("\n## ", 1)[0]


def test_every_path_in_the_layout_tables_exists():
    paths = [
        p
        for p in re.findall(r"`([\w./-]+)`", _section())
        if "/" in p and not p.startswith("./") and "*" not in p
    ]
    assert len(paths) > 15  # the pattern still finds the table's paths
    assert [p for p in paths if not (ROOT / p).exists()] == []
