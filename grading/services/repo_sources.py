"""A task's repository source: found at import and recorded on the task, found again at grading.

The rule of where to look lives in `grading.domain.repos`; this module reads the settings and
writes the result. A task whose source cannot be found is never an error: it is marked "no
source" (admin, import summary, grader runs, the grader's prompt).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from django.conf import settings

from grading.domain.repos import FOUND, SourceLookup, find_source, is_git_repository
from grading.models import Task


def mirror_folders(extra: Sequence[Path] = ()) -> list[Path]:
    return [*extra, *settings.GAGAR_REPO_MIRRORS]


def task_source_lookup(*, task: Task, folders: Sequence[Path] = ()) -> SourceLookup:
    """Where the task's base commit can be read now: its recorded source if still there, else
    its `repo_url` or a mirror (`folders`, then GAGAR_REPO_MIRRORS)."""
    if task.source_status == Task.Source.FOUND and task.source_path:
        recorded = Path(task.source_path)
        if is_git_repository(recorded):
            return SourceLookup(FOUND, recorded, str(recorded))
    return find_source(
        repo=task.repo,
        base_commit=task.base_commit,
        repo_url=task.repo_url,
        folders=mirror_folders(folders),
    )


def task_source_check(*, task: Task, folders: Sequence[Path] = ()) -> SourceLookup:
    """Look the source up (again, unless found before) and record the result on the task."""
    lookup = task_source_lookup(task=task, folders=folders)
    values = {
        "source_status": lookup.status,
        "source_path": str(lookup.path) if lookup.path else "",
        "source_note": lookup.detail,
    }
    if any(getattr(task, k) != v for k, v in values.items()):
        for key, value in values.items():
            setattr(task, key, value)
        task.save(update_fields=list(values))
    return lookup
