"""The sample repository appears whole or not at all (test workers and `./dev up`'s processes
build it concurrently; a reader that saw `.git` before its commit rendered diffs without base)."""

from __future__ import annotations

import subprocess
import threading
from pathlib import Path

from grading.services.demo import sample_repo_build


def _head(repo: Path) -> str:
    return subprocess.run(
        ["git", "-C", str(repo), "rev-parse", "HEAD"], capture_output=True, text=True, check=True
    ).stdout.strip()


def test_concurrent_builds_leave_one_whole_repository(tmp_path: Path) -> None:
    repo = tmp_path / "repos" / "humanize-lite"
    seen_partial: list[str] = []
    stop = threading.Event()

    def watch() -> None:
        # While builds run, a reader either finds no repository or one with its commit.
        while not stop.is_set():
            if (repo / ".git").is_dir():
                r = subprocess.run(["git", "-C", str(repo), "rev-parse", "-q", "--verify", "HEAD"],
                                   capture_output=True, text=True)  # fmt: skip
                if r.returncode != 0:
                    seen_partial.append(r.stderr)

    watcher = threading.Thread(target=watch)
    watcher.start()
    builders = [threading.Thread(target=sample_repo_build, args=(repo,)) for _ in range(3)]
    for b in builders:
        b.start()
    for b in builders:
        b.join()
    stop.set()
    watcher.join()
    assert seen_partial == []
    assert len(_head(repo)) == 40
    # No scratch folder is left behind by the builds that lost the race.
    assert sorted(p.name for p in repo.parent.iterdir()) == ["humanize-lite"]


def test_a_build_over_an_existing_repository_keeps_it(tmp_path: Path) -> None:
    repo = tmp_path / "humanize-lite"
    sample_repo_build(repo)
    before = _head(repo)
    sample_repo_build(repo)
    assert _head(repo) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["humanize-lite"]
