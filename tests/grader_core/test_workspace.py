import os
import shutil
from pathlib import Path

import pytest

from grading.grader import workspace
from grading.grader.workspace import PathRefused, Workspace, resolve_in_tree
from tests.grader_core.fixtures import Fixture, git, root_cause


def test_it_materializes_base_and_patched_trees(fx: Fixture) -> None:
    patch = fx.patch({"calc/textutil.py": root_cause()})
    with Workspace.create(fx.repo, fx.sha, {"A": patch}) as ws:
        assert 'split(" ")' in (ws.tree("base") / "calc/textutil.py").read_text()
        assert "text.split()" in (ws.tree("A") / "calc/textutil.py").read_text()
        assert ws.apply_errors == {}
        root = ws.root
    assert not root.exists()


def test_it_marks_a_patch_that_does_not_apply_without_crashing(fx: Fixture) -> None:
    good = fx.patch({"calc/textutil.py": root_cause()})
    bad = good.replace('words = text.split(" ")', 'words = text.splitlines(" ")')
    with Workspace.create(fx.repo, fx.sha, {"A": good, "B": bad}) as ws:
        assert "B" in ws.apply_errors and "A" not in ws.apply_errors
        assert "patch" in ws.apply_errors["B"] or "error" in ws.apply_errors["B"]


def test_it_leaves_the_source_repository_untouched(fx: Fixture) -> None:
    (fx.repo / "calc/textutil.py").write_text("uncommitted edit\n")  # the index must keep it
    before = (git(fx.repo, "status", "--porcelain"), (fx.repo / ".git/index").read_bytes())
    patch = fx.patch({"calc/textutil.py": root_cause()})
    with Workspace.create(fx.repo, fx.sha, {"A": patch, "B": ""}) as ws:
        assert 'split(" ")' in (ws.tree("B") / "calc/textutil.py").read_text()
    assert not (fx.repo / ".git" / "worktrees").exists()
    after = (git(fx.repo, "status", "--porcelain"), (fx.repo / ".git/index").read_bytes())
    assert after == before


def test_trees_hold_no_git_directory_and_are_independent(fx: Fixture) -> None:
    patch = fx.patch({"calc/textutil.py": root_cause()})
    with Workspace.create(fx.repo, fx.sha, {"A": patch, "B": ""}) as ws:
        assert not any((ws.tree(n) / ".git").exists() for n in ("base", "A", "B"))
        assert "text.split()" in (ws.tree("A") / "calc/textutil.py").read_text()
        # A copy, not a link: the patched file of A is not the base's or B's.
        assert 'split(" ")' in (ws.tree("B") / "calc/textutil.py").read_text()
        assert 'split(" ")' in (ws.tree("base") / "calc/textutil.py").read_text()


def test_a_large_base_tree_is_written_by_git_for_each_candidate(
    fx: Fixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(workspace, "COPY_MAX_FILES", 0)
    patch = fx.patch({"calc/textutil.py": root_cause()})
    with Workspace.create(fx.repo, fx.sha, {"A": patch, "B": ""}) as ws:
        assert "text.split()" in (ws.tree("A") / "calc/textutil.py").read_text()
        assert 'split(" ")' in (ws.tree("B") / "calc/textutil.py").read_text()
        assert not (ws.tree("A") / ".git").exists()


def test_a_workspace_inside_another_checkout_patches_its_own_tree(fx: Fixture) -> None:
    """TMPDIR inside a git checkout: `git apply` must not resolve the patch against it."""
    outer = fx.tmp / "outer"
    shutil.copytree(fx.repo, outer)
    patch = fx.patch({"calc/textutil.py": root_cause()})
    root = outer / "calc" / "ws"
    root.mkdir()
    with Workspace.create(fx.repo, fx.sha, {"A": patch}, root=root) as ws:
        assert ws.apply_errors == {}
        assert "text.split()" in (ws.tree("A") / "calc/textutil.py").read_text()
    assert 'split(" ")' in (outer / "calc/textutil.py").read_text()


def test_an_unknown_base_commit_is_a_workspace_error(fx: Fixture) -> None:
    with pytest.raises(workspace.WorkspaceError, match="read-tree"):
        Workspace.create(fx.repo, "0" * 40, {"A": ""})


def test_a_scratch_copy_takes_writes_and_disappears(fx: Fixture) -> None:
    patch = fx.patch({"calc/textutil.py": root_cause()})
    with Workspace.create(fx.repo, fx.sha, {"A": patch}) as ws:
        tree = ws.tree("A")
        with ws.scratch_copy("A") as copy:
            assert "text.split()" in (copy / "calc/textutil.py").read_text()
            assert not (copy / ".git").exists()
            (copy / "calc/textutil.py").write_text("garbage")
            (copy / "junk.txt").write_text("x")
        assert not copy.exists()
        assert "text.split()" in (tree / "calc/textutil.py").read_text()
        assert not (tree / "junk.txt").exists()


@pytest.mark.parametrize(
    "rel", ["../etc/passwd", "calc/../../x", "/etc/passwd", ".git/config", "~/x"]
)
def test_it_refuses_paths_outside_the_tree(tmp_path: Path, rel: str) -> None:
    (tmp_path / "calc").mkdir()
    with pytest.raises(PathRefused):
        resolve_in_tree(tmp_path, rel)


def test_it_refuses_a_symlink_that_leaves_the_tree(tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    tree.mkdir()
    (tmp_path / "secret.txt").write_text("secret")
    os.symlink(tmp_path / "secret.txt", tree / "link.txt")
    os.symlink(tmp_path, tree / "linkdir")
    (tree / "ok.txt").write_text("ok")
    os.symlink(tree / "ok.txt", tree / "inner.txt")
    with pytest.raises(PathRefused):
        resolve_in_tree(tree, "link.txt")
    with pytest.raises(PathRefused):
        resolve_in_tree(tree, "linkdir/secret.txt")
    assert resolve_in_tree(tree, "inner.txt") == (tree / "ok.txt").resolve()
