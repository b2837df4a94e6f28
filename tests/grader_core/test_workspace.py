import os
from pathlib import Path

import pytest

from grading.grader.workspace import PathRefused, Workspace, resolve_in_tree
from tests.grader_core.fixtures import Fixture, root_cause


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
    with Workspace.create(fx.repo, fx.sha, {"A": ""}):
        pass
    assert not (fx.repo / ".git" / "worktrees").exists()


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
