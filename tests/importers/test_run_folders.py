"""`import swebench --run-folder`: the real groups laid out as the experiments repository does."""

from __future__ import annotations

import json
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from grading.models import Attempt, Group, Task, Trajectory
from tests.importers.swebench_files import (
    by_system,
    harness_test_output,
    load_rows,
    write_run_folder,
    write_tasks,
)

pytestmark = pytest.mark.django_db


def run_import(*args: str, err: StringIO | None = None) -> str:
    out = StringIO()
    call_command("import", "swebench", *args, "--no-progress", stdout=out, stderr=err or StringIO())
    return out.getvalue()


def layout(shared: Path, root: Path) -> list[str]:
    """tasks.jsonl and one run folder per system; SWE-agent's folders use preds.json."""
    rows = load_rows(shared)
    root.mkdir(parents=True, exist_ok=True)
    args = ["--tasks", str(write_tasks(rows, root / "tasks.jsonl"))]
    for system, entries in by_system(rows).items():
        preds = "preds.json" if system.startswith("swe-agent/") else "all_preds.jsonl"
        folder = write_run_folder(root, system, entries, shared=shared, preds=preds)
        args += ["--run-folder", str(folder)]
    return args


def test_it_imports_the_real_groups_from_run_folders(shared_data, tmp_path):
    out = run_import(*layout(shared_data, tmp_path), "--run", "lite-2024")

    rows = load_rows(shared_data)
    assert Group.objects.filter(step__run__name="lite-2024").count() == 27
    assert Attempt.objects.count() == 278
    assert Attempt.objects.filter(status="valid", test_reward=1.0).count() == 169
    assert "169 of 278 attempts pass" in out
    for row in rows:
        group = Group.objects.get(task__external_id=row["instance_id"])
        attempts = {a.agent_system: a for a in group.attempts.select_related("patch")}
        # metadata.yaml's info.name is the label.
        assert set(attempts) == {c["system"] for c in row["candidates"]}
        for c in row["candidates"]:
            a = attempts[c["system"]]
            assert bytes(a.patch.content) == c["patch"].encode("utf-8")
            assert a.test_reward == float(c["resolved"])
            assert a.agent_model == c["model_name_or_path"]
            # Per-instance test_output.txt and tests_status came along.
            assert a.test_output().decode() == harness_test_output(row, c["resolved"])
            assert (
                a.test_report["FAIL_TO_PASS"]["success" if c["resolved"] else "failure"]
                == (row["FAIL_TO_PASS"])
            )
            assert a.test_report["PASS_TO_PASS"] == {"success": row["PASS_TO_PASS"], "failure": []}
    task = Task.objects.get(external_id=rows[0]["instance_id"])
    assert bytes(task.gold_patch.content) == rows[0]["gold_patch"].encode()

    # trajs/<id>.traj (SWE-agent), trajs/<id>.json (Moatless), trajs/<id>/*.json (ACR).
    manifest = json.loads((shared_data / "trajectories" / "MANIFEST.json").read_text())
    assert Trajectory.objects.count() == len(manifest) == 15
    for entry in manifest:
        assert Trajectory.objects.filter(
            attempt__agent_system=entry["system"],
            attempt__group__task__external_id=entry["instance_id"],
        ).exists()

    # The same folders again: nothing changes.
    again = run_import(*layout(shared_data, tmp_path / "again"), "--run", "lite-2024")
    assert "0 groups created, 27 unchanged" in again
    assert Attempt.objects.count() == 278


def test_per_instance_reports_take_precedence_over_the_run_level_one(shared_data, tmp_path):
    rows = load_rows(shared_data)[:3]
    system, entries = next(iter(by_system(rows).items()))
    folder = write_run_folder(tmp_path, system, entries)
    # The run-level report disagrees for the first instance; the harness's own report wins.
    first = entries[0][0]["instance_id"]
    results = folder / "results" / "results.json"
    data = json.loads(results.read_text())
    data["resolved"] = (
        [i for i in data["resolved"] if i != first]
        if entries[0][1]["resolved"]
        else [*data["resolved"], first]
    )
    results.write_text(json.dumps(data, indent=4))
    run_import("--tasks", str(write_tasks(rows, tmp_path / "t.jsonl")), "--run-folder", str(folder))
    a = Attempt.objects.get(group__task__external_id=first)
    assert a.test_reward == float(entries[0][1]["resolved"])


def test_a_run_level_report_alone_labels_the_attempts(shared_data, tmp_path):
    rows = load_rows(shared_data)
    system, entries = next(iter(by_system(rows).items()))
    folder = write_run_folder(tmp_path, system, entries, per_instance=False)
    run_import("--tasks", str(write_tasks(rows, tmp_path / "t.jsonl")), "--run-folder", str(folder))
    assert Attempt.objects.filter(test_reward=1.0).count() == sum(c["resolved"] for _, c in entries)
    assert not Attempt.objects.exclude(test_output_size=0).exists()


def test_runs_sharing_a_metadata_name_get_their_folder_added(shared_data, tmp_path):
    rows = load_rows(shared_data)[:2]
    systems = list(by_system(rows).items())[:2]
    folders = [write_run_folder(tmp_path, s, e, metadata_name="AutoCodeRover") for s, e in systems]
    run_import(
        "--tasks",
        str(write_tasks(rows, tmp_path / "t.jsonl")),
        *[x for f in folders for x in ("--run-folder", str(f))],
    )
    names = set(Attempt.objects.values_list("agent_system", flat=True))
    assert names == {f"AutoCodeRover [{f.name}]" for f in folders}


def test_a_folder_without_a_report_warns_that_nothing_will_be_graded(shared_data, tmp_path):
    rows = load_rows(shared_data)[:4]
    system, entries = next(iter(by_system(rows).items()))
    folder = write_run_folder(tmp_path, system, entries, per_instance=False, run_level=False)
    tasks = str(write_tasks(rows, tmp_path / "t.jsonl"))
    out = run_import("--tasks", tasks, "--run-folder", str(folder))
    assert "warning: 0 passing attempts: nothing will be graded" in out
    assert "no evaluation report" in out and str(folder) in out
    assert Attempt.objects.count() == len(entries)


def test_require_passing_turns_the_warning_into_an_error(shared_data, tmp_path, capsys):
    rows = load_rows(shared_data)[:4]
    system, entries = next(iter(by_system(rows).items()))
    folder = write_run_folder(tmp_path, system, entries, per_instance=False, run_level=False)
    tasks = str(write_tasks(rows, tmp_path / "t.jsonl"))
    with pytest.raises(CommandError, match="nothing was written"):
        call_command(
            "import", "swebench", "--tasks", tasks, "--run-folder", str(folder),
            "--require-passing", "--partial", "--no-progress",
        )  # fmt: skip
    assert "0 passing attempts" in capsys.readouterr().err
    assert Group.objects.count() == Task.objects.count() == Attempt.objects.count() == 0


def test_a_folder_without_predictions_is_refused_saying_what_it_holds(shared_data, tmp_path):
    rows = load_rows(shared_data)[:2]
    for system, entries in list(by_system(rows).items())[:2]:
        write_run_folder(tmp_path, system, entries)
    split = tmp_path / "evaluation" / "lite"
    with pytest.raises(CommandError) as refused:
        run_import(
            "--tasks", str(write_tasks(rows, tmp_path / "t.jsonl")), "--run-folder", str(split)
        )
    message = str(refused.value)
    assert str(split) in message and "all_preds.jsonl" in message and "preds.json" in message
    assert "give each one with --run-folder" in message
    assert Group.objects.count() == Task.objects.count() == 0


def test_a_broken_metadata_file_names_its_line(shared_data, tmp_path):
    rows = load_rows(shared_data)[:2]
    system, entries = next(iter(by_system(rows).items()))
    folder = write_run_folder(tmp_path, system, entries)
    (folder / "metadata.yaml").write_text("info:\n  name: [unclosed\n  site: x\n")
    with pytest.raises(CommandError) as refused:
        run_import(
            "--tasks", str(write_tasks(rows, tmp_path / "t.jsonl")), "--run-folder", str(folder)
        )
    assert f"{folder / 'metadata.yaml'}:" in str(refused.value)
    assert "not valid YAML" in str(refused.value)
    assert Group.objects.count() == 0


def test_a_bad_entry_of_an_indented_report_names_its_line_and_field(shared_data, tmp_path):
    rows = load_rows(shared_data)[:3]
    system, entries = next(iter(by_system(rows).items()))
    folder = write_run_folder(tmp_path, system, entries)
    instance = entries[1][0]["instance_id"]
    report = folder / "logs" / instance / "report.json"
    text = (
        report.read_text()
        .replace('"resolved": false', '"resolved": "no"')
        .replace('"resolved": true', '"resolved": "yes"')
    )
    report.write_text(text)
    err = StringIO()
    with pytest.raises(CommandError):
        run_import(
            "--tasks",
            str(write_tasks(rows, tmp_path / "t.jsonl")),
            "--run-folder",
            str(folder),
            err=err,
        )
    # Line 2 holds the instance's key in the indented object.
    assert f"{report}:2: $.{instance}.resolved: must be true or false" in err.getvalue()
    assert Group.objects.count() == 0
