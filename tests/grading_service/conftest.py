from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from grading.models import Attempt, Group
from grading.sample.build import build_repo
from grading.services.demo import sample_load


@pytest.fixture(scope="session")
def sample_repo_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    # Built once per session, copied per test: a test's grader may not see another's writes.
    repo = tmp_path_factory.mktemp("sample") / "humanize-lite"
    build_repo(repo)
    return repo


@pytest.fixture
def grader_settings(settings: Any, tmp_path: Path) -> Any:
    settings.VAR_DIR = tmp_path / "var"
    settings.GAGAR_REPO_DIR = tmp_path / "var" / "repos"
    settings.GAGAR_SANDBOX = "none"
    return settings


@pytest.fixture
def sample_group(grader_settings: Any, sample_repo_template: Path) -> Group:
    target = Path(grader_settings.GAGAR_REPO_DIR) / "humanize-lite"
    shutil.copytree(sample_repo_template, target, symlinks=True)
    report = sample_load(grade=False)
    assert report.ok, report.problems
    return Group.objects.get(pk=report.results[0].group_id)


def attempt_ids(group: Group) -> dict[str, int]:
    """External id ("a1") -> primary key."""
    return dict(Attempt.objects.filter(group=group).values_list("external_id", "pk"))
