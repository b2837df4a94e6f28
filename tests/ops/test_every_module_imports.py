"""Every module of the project imports. mypy runs with `ignore_missing_imports` (for untyped
third-party packages), so an import of a module that a move removed passes lint; this fails."""

from __future__ import annotations

import importlib
import pkgutil

import pytest

PACKAGES = ("gagar_site", "grading", "review")


def _modules() -> list[str]:
    names = []
    for package in PACKAGES:
        root = importlib.import_module(package)
        names.append(package)
        for info in pkgutil.walk_packages(root.__path__, prefix=f"{package}."):
            names.append(info.name)
    return sorted(names)


@pytest.mark.parametrize("name", _modules())
def test_the_module_imports(name: str) -> None:
    importlib.import_module(name)
