"""What kind of file a path is (tests, junk) and what the repository's own configuration says."""

from __future__ import annotations

import configparser
import re
import tomllib
from pathlib import PurePosixPath

from grading.diffs import in_test_dir, is_test_path
from grading.grader.analysis.views import Reader

__all__ = ["is_junk", "is_test_path", "line_limit", "min_python"]

_SCRATCH_NAME = re.compile(
    r"(^|[_.-])(repro|reproduce|reproduction|debug|scratch|tmp|temp|sandbox|demo|try)([_.-]|$)",
    re.IGNORECASE,
)
_BACKUP = (".orig", ".rej", ".bak", ".swp", ".tmp", "~", ".pyc")
_ROOT_FILES = {"setup.py", "conftest.py", "noxfile.py", "manage.py", "tasks.py", "fabfile.py"}
_ROOT_SCRIPT = (".py", ".sh", ".txt", ".log", ".out", ".diff", ".patch")


def is_junk(path: str, *, is_new: bool) -> bool:
    """Committed reproduction/debug scripts, scratch tests outside the test tree, backups."""
    name = PurePosixPath(path).name
    if name.endswith(_BACKUP):
        return True
    if not is_new or in_test_dir(path):
        return False
    if "/" not in path and name.endswith(_ROOT_SCRIPT) and name not in _ROOT_FILES:
        return True
    stem = name.rsplit(".", 1)[0]
    return bool(_SCRATCH_NAME.search(stem)) or is_test_path(name)


# Limits projects configure; a partial view only shows a lower bound, so round up to one.
_CONVENTIONAL_LIMITS = (79, 88, 99, 119)
_CONFIGS = ("setup.cfg", "tox.ini", ".flake8", "pyproject.toml")


def line_limit(read: Reader | None) -> int | None:
    """max-line-length from the repository's flake8/pycodestyle/ruff/black configuration."""
    if read is None:
        return None
    for name in _CONFIGS:
        text = read(name)
        if not text:
            continue
        limit = _toml_limit(text) if name.endswith(".toml") else _ini_limit(text)
        if limit:
            return limit
    return None


def inferred_line_limit(longest_seen: int) -> int | None:
    """The smallest conventional limit the visible lines respect; None if they respect none."""
    return next((lim for lim in _CONVENTIONAL_LIMITS if longest_seen <= lim), None)


def _ini_limit(text: str) -> int | None:
    parser = configparser.ConfigParser(interpolation=None, strict=False)
    try:
        parser.read_string(text)
    except configparser.Error:
        return None
    for section in ("flake8", "pycodestyle", "pep8", "tool:flake8"):
        for key in ("max-line-length", "max_line_length"):
            value = parser.get(section, key, fallback="").strip()
            if value.isdigit():
                return int(value)
    return None


def _toml_limit(text: str) -> int | None:
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        return None
    tool = data.get("tool", {})
    for value in (
        tool.get("flake8", {}).get("max-line-length"),
        tool.get("ruff", {}).get("line-length"),
        tool.get("black", {}).get("line-length"),
    ):
        if isinstance(value, int) and value > 0:
            return value
    return None


_REQUIRES = re.compile(r"python_requires\s*=\s*['\"]?\s*>=\s*3\.(\d+)")
_REQUIRES_TOML = re.compile(r">=\s*3\.(\d+)")


def min_python(read: Reader | None) -> tuple[int, int] | None:
    """The oldest Python 3 the repository declares support for (setup.py/cfg, pyproject)."""
    if read is None:
        return None
    text = read("pyproject.toml")
    if text:
        try:
            spec = tomllib.loads(text).get("project", {}).get("requires-python", "")
        except tomllib.TOMLDecodeError:
            spec = ""
        m = _REQUIRES_TOML.search(str(spec))
        if m:
            return (3, int(m.group(1)))
    for name in ("setup.cfg", "setup.py"):
        text = read(name)
        m = _REQUIRES.search(text or "")
        if m:
            return (3, int(m.group(1)))
    return None
