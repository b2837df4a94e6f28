from pathlib import Path

import pytest

from tests.grader_core.fixtures import Fixture, build_repo


@pytest.fixture
def fx(tmp_path: Path) -> Fixture:
    repo = tmp_path / "repo"
    sha = build_repo(repo)
    edits = tmp_path / "edits"
    edits.mkdir()
    return Fixture(repo, sha, edits)
