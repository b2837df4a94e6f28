"""The SWE-bench importer on the real shared data, converted in the test to the input shapes."""

import json
from collections import defaultdict
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from grading.models import Attempt, Group, Task, Trajectory
from grading.selectors.rollouts import trajectory_events

pytestmark = pytest.mark.django_db


def write_inputs(shared: Path, out: Path) -> list[str]:
    """tasks.jsonl, and per system predictions (JSONL or JSON array) and a report."""
    rows = [json.loads(line) for line in (shared / "groups.jsonl").read_text().splitlines()]
    with (out / "tasks.jsonl").open("w") as handle:
        for row in rows:
            task = {
                k: row[k]
                for k in (
                    "instance_id",
                    "repo",
                    "base_commit",
                    "problem_statement",
                    "version",
                    "hints_text",
                )
            }
            # Hugging Face stores the test lists as JSON strings; accept both shapes.
            task["FAIL_TO_PASS"] = json.dumps(row["FAIL_TO_PASS"])
            task["PASS_TO_PASS"] = row["PASS_TO_PASS"]
            task["patch"] = row["gold_patch"]
            task["test_patch"] = row["test_patch"]
            handle.write(json.dumps(task) + "\n")
    predictions: dict[str, list[dict]] = defaultdict(list)
    resolved: dict[str, list[str]] = defaultdict(list)
    for row in rows:
        for c in row["candidates"]:
            predictions[c["system"]].append(
                {
                    "instance_id": row["instance_id"],
                    "model_name_or_path": c["model_name_or_path"],
                    "model_patch": c["patch"],
                }
            )
            if c["resolved"]:
                resolved[c["system"]].append(row["instance_id"])
    args = ["--tasks", str(out / "tasks.jsonl"), "--run", "swebench-lite", "--no-progress"]
    for index, (system, preds) in enumerate(sorted(predictions.items())):
        folder = out / system.replace("/", "__")
        folder.mkdir()
        if index % 2:
            (folder / "predictions.json").write_text(json.dumps(preds, indent=2))
            args += ["--predictions", str(folder / "predictions.json")]
        else:
            (folder / "all_preds.jsonl").write_text("".join(json.dumps(p) + "\n" for p in preds))
            args += ["--predictions", str(folder / "all_preds.jsonl")]
        if index % 3 == 2:
            # The current harness's shape: one report.json per instance.
            for p in preds:
                inst = folder / "logs" / p["instance_id"]
                inst.mkdir(parents=True)
                (inst / "report.json").write_text(
                    json.dumps(
                        {p["instance_id"]: {"resolved": p["instance_id"] in resolved[system]}}
                    )
                )
            args += ["--report", str(folder / "logs")]
        else:
            (folder / "report.json").write_text(json.dumps({"resolved": resolved[system]}))
            args += ["--report", str(folder / "report.json")]
        args += ["--label", system]
        traj = shared / "trajectories" / system
        args += ["--trajectories", str(traj if traj.is_dir() else folder)]
    return args


def test_it_imports_the_real_swebench_groups(shared_data, tmp_path):
    args = write_inputs(shared_data, tmp_path)
    call_command("import", "swebench", *args)

    rows = [json.loads(line) for line in (shared_data / "groups.jsonl").read_text().splitlines()]
    assert Group.objects.count() == 27 == len(rows)
    assert Attempt.objects.count() == 278
    assert Attempt.objects.filter(test_reward=1.0).count() == 169
    for row in rows:
        group = Group.objects.get(task__external_id=row["instance_id"])
        got = dict(group.attempts.values_list("agent_system", "test_reward"))
        assert got == {c["system"]: float(c["resolved"]) for c in row["candidates"]}
        patches = {a.agent_system: a.patch.text for a in group.attempts.all() if a.patch}
        assert patches == {c["system"]: c["patch"] for c in row["candidates"]}
    task = Task.objects.get(external_id="django__django-11099")
    assert (
        task.fail_to_pass
        == rows[[r["instance_id"] for r in rows].index(task.external_id)]["FAIL_TO_PASS"]
    )
    assert task.gold_patch is not None and task.test_patch is not None

    # The 15 real trajectories were attached to their candidates.
    manifest = json.loads((shared_data / "trajectories" / "MANIFEST.json").read_text())
    assert Trajectory.objects.count() == len(manifest) == 15
    for entry in manifest:
        trajectory = Trajectory.objects.get(
            attempt__agent_system=entry["system"],
            attempt__group__task__external_id=entry["instance_id"],
        )
        assert trajectory.event_count > 3
        assert trajectory_events(trajectory=trajectory, start=0, count=2)

    # Re-importing the same files changes nothing.
    call_command("import", "swebench", *args)
    assert Attempt.objects.count() == 278


def test_it_refuses_predictions_for_unknown_instances(shared_data, tmp_path, capsys):
    args = write_inputs(shared_data, tmp_path)
    first_preds = Path(args[args.index("--predictions") + 1])
    with first_preds.open("a") as handle:
        handle.write(
            json.dumps(
                {"instance_id": "nope__nope-1", "model_name_or_path": "m", "model_patch": ""}
            )
            + "\n"
        )
    with pytest.raises(CommandError):
        call_command("import", "swebench", *args)
    assert 'no task record for "nope__nope-1"' in capsys.readouterr().err
    assert Group.objects.count() == 0


def test_it_reports_malformed_predictions_with_file_and_line(tmp_path, capsys):
    (tmp_path / "tasks.jsonl").write_text(
        json.dumps({"instance_id": "a__b-1", "repo": "a/b", "problem_statement": "x"}) + "\n"
    )
    (tmp_path / "preds.jsonl").write_text(
        json.dumps({"instance_id": "a__b-1", "model_name_or_path": "m", "model_patch": "garbage"})
        + "\n{oops\n"
    )
    with pytest.raises(CommandError):
        call_command(
            "import",
            "swebench",
            "--tasks",
            str(tmp_path / "tasks.jsonl"),
            "--predictions",
            str(tmp_path / "preds.jsonl"),
            "--no-progress",
        )
    err = capsys.readouterr().err
    assert f"{tmp_path / 'preds.jsonl'}:1: $.model_patch: not a unified diff" in err


def test_partial_mode_keeps_valid_instances(tmp_path, capsys):
    (tmp_path / "tasks.jsonl").write_text(
        "".join(
            json.dumps({"instance_id": i, "repo": "a/b", "problem_statement": "x"}) + "\n"
            for i in ("a-1", "a-2")
        )
    )
    good = "--- a/x.py\n+++ b/x.py\n@@ -1 +1 @@\n-a\n+b\n"
    (tmp_path / "preds.json").write_text(
        json.dumps(
            [
                {"instance_id": "a-1", "model_name_or_path": "m", "model_patch": good},
                {"instance_id": "a-1", "model_name_or_path": "m", "model_patch": good},
                {"instance_id": "a-2", "model_name_or_path": "m", "model_patch": good},
            ]
        )
    )
    (tmp_path / "report.json").write_text(json.dumps({"resolved": ["a-2"], "with_logs": ["a-2"]}))
    call_command(
        "import",
        "swebench",
        "--tasks",
        str(tmp_path / "tasks.jsonl"),
        "--predictions",
        str(tmp_path / "preds.json"),
        "--report",
        str(tmp_path / "report.json"),
        "--partial",
        "--no-progress",
    )
    assert '$[1].instance_id: duplicate prediction for "a-1"' in capsys.readouterr().err
    statuses = dict(Attempt.objects.values_list("group__task__external_id", "status"))
    # a-1 was never evaluated (not in with_logs): excluded as infra, not called a failure.
    assert statuses == {"a-1": "infra_failed", "a-2": "valid"}
