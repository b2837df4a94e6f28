"""Where a task's source is: a local clone or bare mirror, found without any network.

A task whose `repo` is `owner/name` is looked for in each mirror folder (the import's
`--repos`, then `GAGAR_REPO_MIRRORS`) as `owner/name`, `owner__name` or `name` (each also with a
`.git` suffix, as bare mirrors are often named), after the task's own `repo_url` when that is a
local repository. The first one that holds the base commit is the source. The grader's
workspace makes a `git clone --shared` of it, so the mirror is only ever read: it can be
read-only and shared by every grading host.

Nothing found is not an error: the task is marked "no source" and the grader told so.
"""

from __future__ import annotations

import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

FOUND = "found"
NO_REPOSITORY = "no_repository"
NO_COMMIT = "no_commit"
NO_FOLDERS = "no mirror folder configured"


@dataclass(frozen=True)
class SourceLookup:
    status: str  # FOUND, NO_REPOSITORY or NO_COMMIT
    path: Path | None
    detail: str  # where it was found, or where it was looked for

    @property
    def found(self) -> bool:
        return self.status == FOUND

    def describe(self) -> str:
        if self.found:
            return f"source: {self.path}"
        return f"no source: {self.detail}"


def is_git_repository(path: Path) -> bool:
    """A working copy (has .git) or a bare repository (HEAD and objects/ at its top)."""
    try:
        return (path / ".git").exists() or (
            (path / "HEAD").is_file() and (path / "objects").is_dir()
        )
    except OSError:
        return False


def local_repo_path(repo_url: str) -> Path | None:
    """A task's `repo_url` as a path the workspace can clone, when it is a local repository."""
    if not repo_url or "://" in repo_url or repo_url.startswith("git@"):
        return None
    path = Path(repo_url.removeprefix("file:")).expanduser()
    return path if is_git_repository(path) else None


def mirror_candidates(repo: str, folders: Sequence[Path]) -> list[Path]:
    """Every place a mirror of `owner/name` may be, in the order they are tried."""
    parts = [p for p in repo.strip().split("/") if p]
    if not parts or any(p in (".", "..") for p in parts):
        return []
    name = parts[-1]
    names = ["/".join(parts), "__".join(parts)] if len(parts) > 1 else []
    names.append(name)
    out: list[Path] = []
    for folder in folders:
        for n in names:
            for candidate in (folder / n, folder / f"{n}.git"):
                if candidate not in out:
                    out.append(candidate)
    return out


def has_commit(path: Path, commit: str) -> bool:
    """True when the repository holds `commit` (read-only: `git cat-file -e`)."""
    if not commit or commit.startswith("-"):
        return False
    try:
        result = subprocess.run(
            ["git", "-C", str(path), "cat-file", "-e", f"{commit}^{{commit}}"],
            capture_output=True,
            timeout=60,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return False
    return result.returncode == 0


def find_source(
    *, repo: str, base_commit: str, repo_url: str = "", folders: Sequence[Path] = ()
) -> SourceLookup:
    """The first local repository of the task that holds its base commit."""
    tried: list[Path] = []
    local = local_repo_path(repo_url)
    if local is not None:
        tried.append(local)
    tried += [p for p in mirror_candidates(repo, folders) if is_git_repository(p)]
    without_commit: list[Path] = []
    for path in tried:
        if has_commit(path, base_commit):
            return SourceLookup(FOUND, path.resolve(), str(path.resolve()))
        without_commit.append(path)
    if without_commit:
        commit = base_commit or "(no base commit given)"
        return SourceLookup(
            NO_COMMIT,
            None,
            f"{', '.join(map(str, without_commit))} does not hold commit {commit}",
        )
    what = f"no local clone or mirror of {repo!r}"
    if repo_url and local is None:
        what += f" (repo_url {repo_url!r} is not a local repository)"
    where = (
        f" in {', '.join(str(f) for f in folders)}"
        if folders
        else f" ({NO_FOLDERS}: --repos DIR or GAGAR_REPO_MIRRORS)"
    )
    return SourceLookup(NO_REPOSITORY, None, what + where)
