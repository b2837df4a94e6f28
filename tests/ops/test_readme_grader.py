"""The README's grader section keeps up with the code: the queue of every routed task, and a
row for every environment variable the grader's workers read."""

from __future__ import annotations

import re
from pathlib import Path

from django.conf import settings

ROOT = Path(__file__).resolve().parents[2]
# The variables a grading worker reads (the pool is a worker's, on a threads pool).
FAMILIES = ("GAGAR_GRADER_", "GAGAR_SANDBOX", "GAGAR_DB_POOL_MAX")


def _section() -> str:
    text = (ROOT / "README.md").read_text()
    return text.split("\n## Grader\n", 1)[1].split("\n## ", 1)[0].split("\n### ", 1)[0]


def _named_in_table(section: str) -> set[str]:
    """Every variable the table names, `_SUFFIX` shorthands expanded: a shorthand replaces the
    last part of the row's first full name (`GAGAR_GATE_MIN_KAPPA`, `_CONCORDANCE`)."""
    names: set[str] = set()
    for row in (line for line in section.splitlines() if line.startswith("| `")):
        first = row.split("|")[1]
        full = re.findall(r"`([A-Z][A-Z0-9_]+)`", first)
        names |= set(full)
        if full:
            stem = full[0].rsplit("_", 1)[0]
            names |= {stem + short for short in re.findall(r"`(_[A-Z0-9_]+)`", first)}
    return names


def _read_by_settings() -> set[str]:
    source = (ROOT / "gagar_site" / "settings.py").read_text()
    read = set(re.findall(r'env_(?:str|int|float|bool)\(\s*"([A-Z0-9_]+)"', source))
    return {name for name in read if name.startswith(FAMILIES)}


def test_every_grader_variable_has_a_row():
    wanted = _read_by_settings()
    assert len(wanted) > 20  # the pattern still finds the settings
    assert sorted(wanted - _named_in_table(_section())) == []


def test_the_routed_tasks_and_their_queues_are_named():
    section = " ".join(_section().split())  # the prose, its line breaks aside
    for task, route in settings.CELERY_TASK_ROUTES.items():
        assert f"`{task}` goes to the `{route['queue']}` queue" in section
    # Everything else: the default queue, which therefore needs a worker too.
    assert f"goes to `{settings.CELERY_TASK_DEFAULT_QUEUE}`" in section
    assert f"worker -Q {settings.CELERY_TASK_DEFAULT_QUEUE}`" in section
