"""Materialize a group's trees on disk: the base commit once, then each candidate's post-patch tree.

Everything lives under one temporary directory. The base tree is written straight from the task's
repository by one `git read-tree -u` into an index file of our own (GIT_INDEX_FILE), so the source
repository is only read, never written (no clone, no worktree metadata, no hooks). Each
candidate's tree is a copy of the base tree (in-process for a small tree, by `read-tree` again for
a large one) with its patch applied by `git apply`, run outside any repository. Trees hold no
`.git`: the tools only read them, and checks run on a scratch copy (`scratch_copy`).

Per run that is one git process plus one per non-empty patch (it was two per candidate plus two:
a clone, a checkout, a worktree and an apply each), which matters when a worker grades a
training step's 128 groups at once.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path, PurePosixPath
from types import TracebackType

BASE = "base"
_GIT_ID = [
    "-c",
    "user.name=gagar",
    "-c",
    "user.email=gagar@localhost",
    "-c",
    "commit.gpgsign=false",
]


class WorkspaceError(Exception):
    """The base tree could not be materialized (bad repository or commit)."""


class PathRefused(ValueError):
    """A tool asked for a path outside its tree."""


# A base tree of at most this many files is copied in-process for each candidate (cheaper than a
# process: ~5 ms of CPU for git); a larger one is written by git for each, in C and outside the
# interpreter's lock, which a worker grading many runs in threads shares (copying 2,000 files in
# Python takes ~0.15 s of CPU under it).
COPY_MAX_FILES = 64


def _git(
    cwd: Path, *args: str, stdin: str | None = None, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["git", *_GIT_ID, *args],
        cwd=cwd,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        env={**os.environ, **env} if env else None,
    )


def resolve_in_tree(root: Path, rel: str) -> Path:
    """Resolve `rel` under `root`; refuse absolute paths, `..`, `.git` and escaping symlinks."""
    if not rel or rel in (".", "/"):
        return root.resolve()
    pure = PurePosixPath(rel.replace("\\", "/"))
    if pure.is_absolute() or rel.startswith("~"):
        raise PathRefused(f"absolute paths are not allowed: {rel!r}")
    if ".." in pure.parts:
        raise PathRefused(f"'..' is not allowed: {rel!r}")
    if pure.parts and pure.parts[0] == ".git":
        raise PathRefused("the .git directory is not part of the tree")
    real_root = root.resolve()
    target = (real_root / pure).resolve()
    # resolve() follows symlinks, so a link pointing outside the tree lands outside real_root.
    if target != real_root and real_root not in target.parents:
        raise PathRefused(f"path leaves the tree: {rel!r}")
    return target


class Workspace:
    def __init__(self, root: Path, *, owns_root: bool) -> None:
        self.root = root
        self._owns_root = owns_root
        self.trees: dict[str, Path] = {}
        self.apply_errors: dict[str, str] = {}
        self._copy_base = True
        self._source: tuple[Path, str] = (root, "")

    @classmethod
    def create(
        cls,
        repo_path: Path,
        base_commit: str,
        patches: Mapping[str, str],
        *,
        root: Path | None = None,
    ) -> Workspace:
        """Check out `base_commit` and one tree per (name -> patch); names are candidate aliases."""
        owns = root is None
        ws = cls(
            Path(tempfile.mkdtemp(prefix="gagar-ws-")) if root is None else root, owns_root=owns
        )
        try:
            ws._make_base(repo_path, base_commit)
            for name, patch in patches.items():
                ws._make_candidate(name, patch, base_commit)
        except BaseException:
            ws.cleanup()
            raise
        return ws

    def _read_tree(self, repo_path: Path, commit: str, tree: Path) -> None:
        """Write `commit`'s files into `tree`: the index is ours, the repository only read."""
        tree.mkdir()
        index = self.root / f".index-{tree.name}"
        res = _git(
            repo_path,
            f"--work-tree={tree}",
            "read-tree",
            "--reset",
            "-u",
            commit,
            env={"GIT_INDEX_FILE": str(index)},
        )
        index.unlink(missing_ok=True)
        if res.returncode != 0:
            raise WorkspaceError(f"git read-tree {commit} failed: {res.stderr.strip()}")

    def _make_base(self, repo_path: Path, base_commit: str) -> None:
        base = self.root / BASE
        self._read_tree(repo_path, base_commit, base)
        self.trees[BASE] = base
        files = 0
        for _, _, names in os.walk(base):
            files += len(names)
        self._copy_base = files <= COPY_MAX_FILES
        self._source = (repo_path, base_commit)

    def _make_candidate(self, name: str, patch: str, base_commit: str) -> None:
        if name == BASE:
            raise ValueError("'base' is reserved for the base tree")
        tree = self.root / f"cand-{name}"
        if self._copy_base:
            shutil.copytree(self.trees[BASE], tree, symlinks=True)
        else:
            self._read_tree(self._source[0], base_commit, tree)
        self.trees[name] = tree
        if patch.strip():
            text = patch if patch.endswith("\n") else patch + "\n"
            # Outside any repository (git must not find one above the workspace, e.g. when
            # TMPDIR is inside a checkout: it would resolve the patch's paths against that).
            res = _git(
                tree,
                "apply",
                "--whitespace=nowarn",
                "-",
                stdin=text,
                env={"GIT_CEILING_DIRECTORIES": str(self.root)},
            )
            if res.returncode != 0:
                # The candidate keeps a pristine base tree; the error is shown to the grader.
                self.apply_errors[name] = res.stderr.strip() or "git apply failed"

    def tree(self, name: str) -> Path:
        if name not in self.trees:
            raise KeyError(name)
        return self.trees[name]

    def resolve(self, name: str, rel: str) -> Path:
        return resolve_in_tree(self.tree(name), rel)

    @contextmanager
    def scratch_copy(self, name: str) -> Iterator[Path]:
        """A throwaway copy of a tree for one check, deleted afterwards.

        Checks never run in the tree itself: whatever they write cannot reach later reads, and
        the sandbox may hand the copy to an unprivileged user (it chowns its workdir), which
        must not happen to a git worktree the service keeps using. `.git` is left out.
        """
        holder = Path(tempfile.mkdtemp(prefix="gagar-check-"))
        try:
            # The sandbox user must be able to reach the copy through its parent.
            holder.chmod(0o755)
            copy = holder / "tree"
            shutil.copytree(
                self.tree(name), copy, symlinks=True, ignore=shutil.ignore_patterns(".git")
            )
            yield copy
        finally:
            shutil.rmtree(holder, ignore_errors=True)

    def line_count(self, name: str, rel: str) -> int | None:
        """Number of lines of a file in a tree, or None when the file is missing or refused."""
        try:
            path = self.resolve(name, rel)
        except (PathRefused, KeyError):
            return None
        if not path.is_file():
            return None
        with path.open("rb") as fh:
            data = fh.read()
        return data.count(b"\n") + (0 if data.endswith(b"\n") or not data else 1)

    def cleanup(self) -> None:
        if self._owns_root:
            shutil.rmtree(self.root, ignore_errors=True)
        else:
            for tree in list(self.trees.values()):
                shutil.rmtree(tree, ignore_errors=True)
        self.trees.clear()

    def __enter__(self) -> Workspace:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.cleanup()
