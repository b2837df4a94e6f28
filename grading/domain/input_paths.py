"""Why a path given on the command line is not the file it should be (pure, reads only names).

`manage.py import bundle DIR` used to answer "no such file" for a folder that plainly exists;
it says what it is instead, and where a folder is a run folder (it holds predictions, `logs/`),
names the subcommand that reads one.
"""

from __future__ import annotations

from pathlib import Path

from grading.domain.run_folders import PREDICTIONS

_RUN_FOLDER_PARTS = (*PREDICTIONS, "logs", "trajs", "results")


def looks_like_run_folder(path: Path) -> bool:
    """Whether `path` is laid out like a SWE-bench run folder (predictions, logs/, trajs/)."""
    return any((path / name).exists() for name in _RUN_FOLDER_PARTS)


def file_problem(path: Path, *, hint: str = "") -> str | None:
    """None when `path` is a file to read, else the one line saying what it is instead.

    `hint` is added for a folder that is not a run folder (e.g. "give one of its .jsonl files").
    """
    if path.is_file():
        return None
    if not path.exists():
        return f"{path}: no such file"
    if not path.is_dir():
        return f"{path}: not a regular file"
    message = f"{path}: is a folder, not a file"
    if looks_like_run_folder(path):
        return (
            f"{message}; it looks like a SWE-bench run folder: import it with "
            f"`manage.py import swebench --tasks TASKS --run-folder {path}`"
        )
    files = sorted(p.name for p in path.glob("*.jsonl") if p.is_file())[:3]
    if files:
        return f"{message}; give one of the files in it (e.g. {path / files[0]})"
    return f"{message}{'; ' + hint if hint else ''}"
