"""Every shape of SCHEMAS.md §1–2, written with the keys, nesting and indentation shown there
(the elided parts filled in from the real groups), imports; bad files say what they were read as.
"""

from __future__ import annotations

import json
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from grading.models import Attempt, Group, Task
from tests.importers.swebench_files import prediction

pytestmark = pytest.mark.django_db


def run(*args: str) -> tuple[str, str]:
    out, err = StringIO(), StringIO()
    call_command("import", "swebench", *args, "--no-progress", stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


def refused(*args: str) -> str:
    err = StringIO()
    with pytest.raises(CommandError):
        call_command("import", "swebench", *args, "--no-progress", stdout=StringIO(), stderr=err)
    assert Group.objects.count() == Task.objects.count() == Attempt.objects.count() == 0
    return err.getvalue()


def rewards() -> dict[str, tuple[str, float]]:
    return {
        a.group.task.external_id: (a.status, a.test_reward)
        for a in Attempt.objects.select_related("group__task")
    }


def all_preds(real: dict[str, Any], path: Path) -> Path:
    # §1a: one JSON object per line, keys model_name_or_path, instance_id, model_patch.
    path.write_text("".join(json.dumps(prediction(r, c)) + "\n" for r, c in real["entries"]))
    return path


def listing(ids: list[str], resolved: list[str]) -> dict[str, list[str]]:
    return {
        "no_generation": [],
        "generated": ids,
        "with_logs": ids,
        "install_fail": [],
        "reset_failed": [],
        "no_apply": [],
        "applied": ids,
        "test_errored": [],
        "test_timeout": [],
        "resolved": resolved,
    }


def test_1a_all_preds_jsonl_imports(real, tmp_path):
    preds = all_preds(real, tmp_path / "all_preds.jsonl")
    assert preds.read_text().startswith('{"model_name_or_path": ')
    report = tmp_path / "result.json"
    report.write_text(json.dumps(listing(real["ids"], real["resolved"]), indent=4))
    run("--tasks", real["tasks"], "--predictions", str(preds), "--report", str(report))
    expected = {i: ("valid", float(i in real["resolved"])) for i in real["ids"]}
    assert rewards() == expected


def test_1b_an_indented_prediction_array_imports(real, tmp_path):
    # ACR's predictions_for_swebench.json: an indented array of the same three keys.
    items = [
        {"instance_id": r["instance_id"], "model_name_or_path": c["model_name_or_path"],
         "model_patch": c["patch"]}
        for r, c in real["entries"]
    ]  # fmt: skip
    preds = tmp_path / "predictions_for_swebench.json"
    preds.write_text(json.dumps(items, indent=4))
    assert preds.read_text().startswith('[\n    {\n        "instance_id": ')
    run("--tasks", real["tasks"], "--predictions", str(preds))
    patches = {a.group.task.external_id: bytes(a.patch.content) for a in Attempt.objects.all()}
    assert patches == {r["instance_id"]: c["patch"].encode() for r, c in real["entries"]}


def test_2a_an_indented_run_level_report_imports(real, tmp_path):
    preds = all_preds(real, tmp_path / "all_preds.jsonl")
    report = tmp_path / "result.json"
    # Moatless's result.json: one id per line under each list.
    data = listing(real["ids"][1:], real["resolved"])  # the first has no logs: unknown
    data["resolved"] = [i for i in real["resolved"] if i != real["ids"][0]]
    report.write_text(json.dumps(data, indent=4))
    assert report.read_text().startswith('{\n    "no_generation": [],\n    "generated": [\n')
    run("--tasks", real["tasks"], "--predictions", str(preds), "--report", str(report))
    got = rewards()
    assert got[real["ids"][0]] == ("infra_failed", 0.0)
    for i in real["ids"][1:]:
        assert got[i] == ("valid", float(i in real["resolved"]))


def test_2a_environment_failures_are_infra_failures(real, tmp_path):
    preds = all_preds(real, tmp_path / "all_preds.jsonl")
    data = listing(real["ids"], [i for i in real["resolved"] if i != real["ids"][0]])
    data["install_fail"] = [real["ids"][0]]
    report = tmp_path / "results.json"
    report.write_text(json.dumps(data, indent=4))
    run("--tasks", real["tasks"], "--predictions", str(preds), "--report", str(report))
    assert rewards()[real["ids"][0]] == ("infra_failed", 0.0)


def coder_results(real: dict[str, Any]) -> str:
    """CodeR's results.json: a trailing comma after the last item of `no_generation`."""
    ids = ",\n".join(f'        "{i}"' for i in real["ids"])
    resolved = ",\n".join(f'        "{i}"' for i in real["resolved"])
    return (
        "{\n"
        '    "no_generation": [\n'
        '        "pylint-dev__pylint-7993",\n'
        "    ],\n"
        f'    "generated": [\n{ids}\n    ],\n'
        f'    "with_logs": [\n{ids}\n    ],\n'
        f'    "resolved": [\n{resolved}\n    ]\n'
        "}\n"
    )


def test_2a_the_trailing_comma_variant_is_refused_with_its_line_and_the_fix(real, tmp_path):
    preds = all_preds(real, tmp_path / "all_preds.jsonl")
    report = tmp_path / "results.json"
    report.write_text(coder_results(real))
    err = refused("--tasks", real["tasks"], "--predictions", str(preds), "--report", str(report))
    assert f"{report}:3: trailing comma after the last item" in err
    assert "read as one JSON document" in err
    assert "Remove that comma, or re-run with --lenient-json" in err


def test_2a_lenient_json_repairs_the_trailing_comma_and_says_so(real, tmp_path):
    preds = all_preds(real, tmp_path / "all_preds.jsonl")
    report = tmp_path / "results.json"
    report.write_text(coder_results(real))
    out, _ = run(
        "--tasks", real["tasks"], "--predictions", str(preds), "--report", str(report),
        "--lenient-json",
    )  # fmt: skip
    assert f"note: {report}:3: --lenient-json: removed 1 trailing comma (line 3)" in out
    assert rewards() == {i: ("valid", float(i in real["resolved"])) for i in real["ids"]}


def test_2b_final_report_imports(real, tmp_path):
    preds = all_preds(real, tmp_path / "all_preds.jsonl")
    per_project: dict[str, list[str]] = {}
    for row, c in real["entries"]:
        if c["resolved"]:
            per_project.setdefault(row["repo"], []).append(row["instance_id"])
    data = {
        "stats": {
            "generated": len(real["ids"]),
            "with_logs": len(real["ids"]),
            "applied": len(real["ids"]),
            "resolved": len(real["resolved"]),
        },
        "resolved": real["resolved"],
        "resolved_per_project": per_project,
    }
    report = tmp_path / "final_report.json"
    report.write_text(json.dumps(data, indent=4))
    assert report.read_text().startswith('{\n    "stats": {\n        "generated": ')
    run("--tasks", real["tasks"], "--predictions", str(preds), "--report", str(report))
    # No per-instance with_logs: not in `resolved` means not resolved.
    assert rewards() == {i: ("valid", float(i in real["resolved"])) for i in real["ids"]}


def excerpt_instance_report(row: dict[str, Any], resolved: bool) -> str:
    """§2c with the excerpt's own layout: tests_status sections on one line each."""
    f2p = json.dumps(row["FAIL_TO_PASS"])
    return (
        "{\n"
        f'    "{row["instance_id"]}": {{\n'
        '        "patch_is_None": false,\n'
        '        "patch_exists": true,\n'
        '        "patch_successfully_applied": true,\n'
        f'        "resolved": {"true" if resolved else "false"},\n'
        '        "infra_failure": false,\n'
        '        "tests_status": {\n'
        f'            "FAIL_TO_PASS": {{"success": {f2p if resolved else "[]"}, '
        f'"failure": {"[]" if resolved else f2p}}},\n'
        f'            "PASS_TO_PASS": {{"success": {json.dumps(row["PASS_TO_PASS"])}, '
        '"failure": []},\n'
        '            "FAIL_TO_FAIL": {"success": [], "failure": []},\n'
        '            "PASS_TO_FAIL": {"success": [], "failure": []}\n'
        "        }\n"
        "    }\n"
        "}\n"
    )


def test_2c_per_instance_reports_become_test_reports(real, tmp_path):
    preds = all_preds(real, tmp_path / "all_preds.jsonl")
    logs = tmp_path / "logs"
    for row, c in real["entries"]:
        (logs / row["instance_id"]).mkdir(parents=True)
        (logs / row["instance_id"] / "report.json").write_text(
            excerpt_instance_report(row, c["resolved"])
        )
        (logs / row["instance_id"] / "test_output.txt").write_bytes(b"collected 3 items\n\x00\xff")
    run("--tasks", real["tasks"], "--predictions", str(preds), "--report", str(logs))
    for row, c in real["entries"]:
        a = Attempt.objects.get(group__task__external_id=row["instance_id"])
        assert a.test_reward == float(c["resolved"])
        assert a.test_report["PASS_TO_PASS"] == {"success": row["PASS_TO_PASS"], "failure": []}
        assert (
            a.test_report["FAIL_TO_PASS"]["success" if c["resolved"] else "failure"]
            == (row["FAIL_TO_PASS"])
        )
        assert a.test_report["patch_successfully_applied"] is True
        assert a.test_output() == b"collected 3 items\n\x00\xff"  # byte for byte


def test_the_harness_run_report_imports(real, tmp_path):
    # swebench.harness.reporting: print(json.dumps(report, indent=4)) to <model>.<run_id>.json
    preds = all_preds(real, tmp_path / "all_preds.jsonl")
    first, second, *rest = real["ids"]
    resolved = [i for i in rest if i in real["resolved"]]
    report = {
        "total_instances": 300,
        "submitted_instances": len(real["ids"]),
        "completed_instances": len(rest),
        "resolved_instances": len(resolved),
        "unresolved_instances": len(rest) - len(resolved),
        "empty_patch_instances": 0,
        "error_instances": 1,
        "completed_ids": rest,
        "incomplete_ids": [second],
        "empty_patch_ids": [],
        "submitted_ids": real["ids"],
        "resolved_ids": resolved,
        "unresolved_ids": [i for i in rest if i not in resolved],
        "error_ids": [first],
        "schema_version": 2,
    }
    path = tmp_path / "20240623_moatless_claude-3.5-sonnet.eval-1.json"
    path.write_text(json.dumps(report, indent=4) + "\n")
    run("--tasks", real["tasks"], "--predictions", str(preds), "--report", str(path))
    got = rewards()
    assert got[first] == got[second] == ("infra_failed", 0.0)  # errored, incomplete
    assert {i: got[i] for i in rest} == {i: ("valid", float(i in resolved)) for i in rest}


def test_swe_agent_preds_json_keyed_by_instance_imports(real, tmp_path):
    preds = tmp_path / "preds.json"
    preds.write_text(
        json.dumps({r["instance_id"]: prediction(r, c) for r, c in real["entries"]}, indent=4)
    )
    run("--tasks", real["tasks"], "--predictions", str(preds))
    assert Attempt.objects.count() == len(real["entries"])


def test_a_broken_indented_report_says_it_was_read_as_one_document(real, tmp_path):
    preds = all_preds(real, tmp_path / "all_preds.jsonl")
    report = tmp_path / "final_report.json"
    text = json.dumps({"stats": {"resolved": 1}, "resolved": real["resolved"]}, indent=4)
    report.write_text(text.replace('"resolved": [', '"resolved" [', 1))
    err = refused("--tasks", real["tasks"], "--predictions", str(preds), "--report", str(report))
    line = next(n for n, t in enumerate(report.read_text().splitlines(), 1) if '"resolved" [' in t)
    assert f"{report}:{line}: not valid JSON (read as one JSON document" in err
    assert "Expecting ':' delimiter" in err


def test_a_broken_prediction_line_says_it_was_read_as_json_lines(real, tmp_path):
    preds = all_preds(real, tmp_path / "all_preds.jsonl")
    lines = preds.read_text().splitlines()
    lines[2] = lines[2][:40]
    preds.write_text("\n".join(lines) + "\n")
    err = refused("--tasks", real["tasks"], "--predictions", str(preds))
    assert f"{preds}:3: not valid JSON (read as JSON Lines" in err


def test_a_first_prediction_line_broken_mid_line_is_not_called_complete(real, tmp_path):
    preds = all_preds(real, tmp_path / "all_preds.jsonl")
    lines = preds.read_text().splitlines()
    lines[0] = lines[0].replace('": ', '" ', 1)  # a missing colon, mid-line
    preds.write_text("\n".join(lines) + "\n")
    err = refused("--tasks", real["tasks"], "--predictions", str(preds))
    assert f"{preds}:1: not valid JSON (read as JSON Lines, since line 1 breaks off before" in err
    assert "complete JSON value" not in err


def test_a_file_that_is_neither_is_refused_with_its_first_line(real, tmp_path):
    preds = tmp_path / "preds.csv"
    preds.write_text("instance_id,model_patch\nx,y\n")
    err = refused("--tasks", real["tasks"], "--predictions", str(preds))
    assert f"{preds}:1: neither JSON Lines nor one JSON document" in err


def test_tasks_as_an_indented_array_import(real, tmp_path):
    tasks = [json.loads(x) for x in Path(real["tasks"]).read_text().splitlines()]
    path = tmp_path / "tasks.json"
    path.write_text(json.dumps(tasks, indent=2))
    preds = all_preds(real, tmp_path / "all_preds.jsonl")
    run("--tasks", str(path), "--predictions", str(preds))
    assert Task.objects.count() == len(real["rows"])


def test_a_preds_json_entry_under_another_instance_is_refused(real, tmp_path):
    r, c = real["entries"][0]
    other = real["entries"][1][0]["instance_id"]
    preds = tmp_path / "preds.json"
    preds.write_text(json.dumps({other: prediction(r, c)}, indent=4))
    err = refused("--tasks", real["tasks"], "--predictions", str(preds))
    assert f"{preds}:2: $.{other}.instance_id: is not the key it is under" in err


def test_missing_folders_are_refused_before_anything_is_read(real, tmp_path):
    preds = all_preds(real, tmp_path / "all_preds.jsonl")
    for flag, message in (("--repos", "no such folder"), ("--run-folder", "no such folder")):
        with pytest.raises(CommandError, match=message):
            call_command(
                "import", "swebench", "--tasks", real["tasks"], "--predictions", str(preds),
                flag, str(tmp_path / "nowhere"), "--no-progress", stdout=StringIO(),
            )  # fmt: skip
    assert Group.objects.count() == Task.objects.count() == 0
