"""Task sources from local mirror folders: clones or bare mirrors named owner/name, owner__name
or name; the grader checks the base commit out of them and never writes to them."""

from __future__ import annotations

import hashlib
import json
import subprocess
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command

from grading.grader.tool_output import numbered
from grading.models import GraderEvent, GraderRun, Group, Task
from grading.sample.build import GROUP_FILE, build_repo

pytestmark = pytest.mark.django_db
REPO = "gagar-samples/humanize-lite"


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=cwd, capture_output=True, text=True, check=True
    ).stdout


@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The project's own sample repository, built from its sources (no network)."""
    repo = tmp_path_factory.mktemp("upstream") / "humanize-lite"
    build_repo(repo)
    return repo


def make_mirror(source: Path, folder: Path, name: str, kind: str) -> Path:
    target = folder / name
    target.parent.mkdir(parents=True, exist_ok=True)
    flag = {"clone": [], "bare": ["--bare"], "mirror": ["--mirror"]}[kind]
    git(folder, "clone", "--quiet", *flag, str(source), str(target))
    return target


def snapshot(folder: Path) -> dict[str, Any]:
    """Every path under the folder with its mode, size, mtime and content hash."""
    out = {}
    for path in sorted(folder.rglob("*")):
        st = path.lstat()
        digest = hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else ""
        out[str(path.relative_to(folder))] = (st.st_mode, st.st_size, st.st_mtime_ns, digest)
    return out


def import_sample(tmp_path: Path, *extra: str) -> str:
    bundle = tmp_path / "group.jsonl"
    bundle.write_text(GROUP_FILE.read_text())  # repo_url is empty: the mirror must be found
    out = StringIO()
    call_command("import", "bundle", str(bundle), "--no-progress", *extra, stdout=out)
    return out.getvalue()


def grade_inline() -> GraderRun:
    call_command("grade", "--all", "--inline", stdout=StringIO())
    return GraderRun.objects.get()


@pytest.mark.parametrize(
    ("name", "kind"),
    [
        (REPO, "clone"),
        ("gagar-samples__humanize-lite", "bare"),
        ("gagar-samples__humanize-lite.git", "mirror"),
        ("humanize-lite", "mirror"),
    ],
)
def test_the_grader_reads_the_base_commit_from_a_mirror_folder(
    source, tmp_path, settings, name, kind
):
    settings.GAGAR_SANDBOX = "none"
    mirrors = tmp_path / "mirrors"
    mirror = make_mirror(source, mirrors, name, kind)
    subprocess.run(["chmod", "-R", "a-w", str(mirror)], check=True)  # a read-only mirror
    before = snapshot(mirror)

    out = import_sample(tmp_path, "--repos", str(mirrors))
    task = Task.objects.get()
    assert task.source_status == Task.Source.FOUND
    assert Path(task.source_path) == mirror.resolve()
    assert "repository source: 1 task found, 0 no source" in out

    run = grade_inline()
    assert run.status == GraderRun.Status.SUCCEEDED, run.failure_reason
    assert run.has_source is True and run.source_note == str(mirror.resolve())
    reads = GraderEvent.objects.filter(run=run, name="read_file")
    assert reads.exists()
    for event in reads:
        args = event.arguments.get("arguments", event.arguments)
        assert args["tree"] == "base"
        spec = f"{task.base_commit}:{args['path']}"
        if event.output.startswith("error:"):
            # A lint configuration the analysis grader looks for and this repository lacks.
            missing = subprocess.run(["git", "cat-file", "-e", spec], cwd=mirror, check=False)
            assert missing.returncode != 0, event.output
            continue
        at_base = git(mirror, "show", spec)
        # The whole file as it is at the base commit, numbered, inside the untrusted block.
        assert numbered(at_base.splitlines(), 1) in event.output
    assert snapshot(mirror) == before  # never written to
    subprocess.run(["chmod", "-R", "u+w", str(mirror)], check=True)


def test_the_mirror_setting_is_searched_at_grading_time(source, tmp_path, settings):
    settings.GAGAR_SANDBOX = "none"
    out = import_sample(tmp_path)  # no mirror yet: imported all the same, marked
    task = Task.objects.get()
    assert task.source_status == Task.Source.NO_REPOSITORY
    assert (
        "repository source: 0 tasks found, 1 no source "
        "(no mirror folder configured: --repos DIR or GAGAR_REPO_MIRRORS)"
    ) in out
    assert task.source_note.startswith(f"no local clone or mirror of {REPO!r}")
    mirrors = tmp_path / "shared-mirrors"
    make_mirror(source, mirrors, "gagar-samples__humanize-lite.git", "mirror")
    settings.GAGAR_REPO_MIRRORS = [mirrors]
    run = grade_inline()
    assert run.has_source is True
    assert GraderEvent.objects.filter(run=run, name="read_file").exists()


def test_a_task_without_source_is_graded_from_diffs_and_says_so_everywhere(
    tmp_path, settings, admin_client
):
    settings.GAGAR_SANDBOX = "none"
    mirrors = tmp_path / "mirrors"
    mirrors.mkdir()
    out = import_sample(tmp_path, "--repos", str(mirrors))
    task = Task.objects.get()
    assert task.source_status == Task.Source.NO_REPOSITORY
    assert "repository source: 0 tasks found, 1 no source" in out
    assert str(mirrors) in task.source_note
    run = grade_inline()
    assert run.status == GraderRun.Status.SUCCEEDED
    assert run.has_source is False and run.source_note.startswith("no source:")
    first_call = GraderEvent.objects.filter(run=run, kind="llm_call").order_by("seq").first()
    prompt = json.dumps(first_call.arguments)
    assert (
        f"No source: the repository is not available (no local clone or mirror of {REPO})" in prompt
    )
    assert not GraderEvent.objects.filter(run=run, name="read_file").exists()
    runs = admin_client.get("/admin/grading/graderrun/?has_source__exact=0").content.decode()
    assert f"/admin/grading/graderrun/{run.pk}/change/" in runs and "no source" in runs


def test_a_mirror_without_the_base_commit_is_no_source(source, tmp_path, settings):
    mirrors = tmp_path / "mirrors"
    mirror = make_mirror(source, mirrors, "humanize-lite", "clone")
    # Another history under the same name: the task's commit is not in it.
    subprocess.run(["rm", "-rf", str(mirror)], check=True)
    mirror.mkdir()
    git(mirror, "init", "--quiet")
    (mirror / "x").write_text("x\n")
    git(mirror, "add", "x")
    git(mirror, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "--quiet", "-m", "x")
    out = import_sample(tmp_path, "--repos", str(mirrors))
    task = Task.objects.get()
    assert task.source_status == Task.Source.NO_COMMIT
    assert f"does not hold commit {task.base_commit}" in out


def test_reimporting_with_repos_finds_the_source_of_unchanged_tasks(source, tmp_path):
    import_sample(tmp_path)
    assert Task.objects.get().source_status == Task.Source.NO_REPOSITORY
    mirrors = tmp_path / "mirrors"
    make_mirror(source, mirrors, REPO, "clone")
    out = import_sample(tmp_path, "--repos", str(mirrors))
    assert "0 groups created, 1 unchanged" in out
    assert Task.objects.get().source_status == Task.Source.FOUND
    assert Group.objects.count() == 1


def test_the_admin_marks_tasks_without_source(tmp_path, admin_client):
    import_sample(tmp_path)
    page = admin_client.get("/admin/grading/task/")
    assert page.status_code == 200
    assert "no source" in page.content.decode()
