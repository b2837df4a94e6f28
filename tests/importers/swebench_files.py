"""The real shared groups written out as the harness and the experiments repository write them.

Formatting follows the tools: `json.dumps(report, indent=4)` for the harness's reports (its
`run_evaluation.py` and `reporting.py`), one `json.dumps` per line for `all_preds.jsonl`, an
indented array for ACR's `predictions_for_swebench.json`, SWE-agent's `preds.json` keyed by
instance id, and the experiments repository's `evaluation/<split>/<system>/` folders.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

TASK_KEYS = ("instance_id", "repo", "base_commit", "problem_statement", "version", "hints_text")


def load_rows(shared: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (shared / "groups.jsonl").read_text().splitlines()]


def write_tasks(rows: list[dict[str, Any]], path: Path) -> Path:
    with path.open("w") as handle:
        for row in rows:
            task = {k: row[k] for k in TASK_KEYS}
            task["FAIL_TO_PASS"] = json.dumps(row["FAIL_TO_PASS"])  # as Hugging Face stores it
            task["PASS_TO_PASS"] = json.dumps(row["PASS_TO_PASS"])
            task["patch"] = row["gold_patch"]
            task["test_patch"] = row["test_patch"]
            handle.write(json.dumps(task) + "\n")
    return path


def by_system(rows: list[dict[str, Any]]) -> dict[str, list[tuple[dict[str, Any], dict[str, Any]]]]:
    """system -> [(task row, candidate)]"""
    out: dict[str, list[tuple[dict[str, Any], dict[str, Any]]]] = {}
    for row in rows:
        for c in row["candidates"]:
            out.setdefault(c["system"], []).append((row, c))
    return dict(sorted(out.items()))


def prediction(row: dict[str, Any], c: dict[str, Any]) -> dict[str, Any]:
    # The key order of all_preds.jsonl (SCHEMAS.md §1a).
    return {
        "model_name_or_path": c["model_name_or_path"],
        "instance_id": row["instance_id"],
        "model_patch": c["patch"],
    }


def instance_report(row: dict[str, Any], resolved: bool) -> dict[str, Any]:
    """The harness's per-instance report.json (SCHEMAS.md §2c), with tests_status."""
    f2p, p2p = row["FAIL_TO_PASS"], row["PASS_TO_PASS"]
    return {
        row["instance_id"]: {
            "patch_is_None": False,
            "patch_exists": True,
            "patch_successfully_applied": True,
            "resolved": resolved,
            "tests_status": {
                "FAIL_TO_PASS": {
                    "success": f2p if resolved else [],
                    "failure": [] if resolved else f2p,
                },
                "PASS_TO_PASS": {"success": p2p, "failure": []},
                "FAIL_TO_FAIL": {"success": [], "failure": []},
                "PASS_TO_FAIL": {"success": [], "failure": []},
            },
        }
    }


def harness_test_output(row: dict[str, Any], resolved: bool) -> str:
    """A test_output.txt shaped like the harness's (eval script trace, then the tests)."""
    lines = [
        "+ source /opt/miniconda3/bin/activate",
        "+ conda activate testbed",
        f"+ git checkout {row['base_commit']}",
        "+ git apply -v -",
        "Checking patch ...",
        "Applied patch cleanly.",
        ">>>>> Start Test Output",
    ]
    for test in row["FAIL_TO_PASS"]:
        lines.append(f"{'PASSED' if resolved else 'FAILED'} {test}")
    lines += [f"PASSED {t}" for t in row["PASS_TO_PASS"][:20]]
    lines.append(">>>>> End Test Output")
    return "\n".join(lines) + "\n"


def run_level_report(ids: list[str], resolved: list[str]) -> dict[str, Any]:
    """The experiments repository's results/results.json (SCHEMAS.md §2a)."""
    return {
        "no_generation": [],
        "generated": sorted(ids),
        "with_logs": sorted(ids),
        "install_fail": [],
        "reset_failed": [],
        "no_apply": [],
        "applied": sorted(ids),
        "test_errored": [],
        "test_timeout": [],
        "resolved": sorted(resolved),
    }


def folder_name(system: str) -> str:
    return system.split("/", 1)[1]


def write_run_folder(
    root: Path,
    system: str,
    entries: list[tuple[dict[str, Any], dict[str, Any]]],
    *,
    shared: Path | None = None,
    preds: str = "all_preds.jsonl",
    per_instance: bool = True,
    run_level: bool = True,
    metadata_name: str | None = None,
) -> Path:
    """evaluation/lite/<system>/ as the experiments repository lays it out."""
    folder = root / "evaluation" / "lite" / folder_name(system)
    folder.mkdir(parents=True)
    predictions = [prediction(row, c) for row, c in entries]
    if preds == "all_preds.jsonl":
        (folder / preds).write_text("".join(json.dumps(p) + "\n" for p in predictions))
    else:  # SWE-agent's preds.json: one object keyed by instance id
        keyed = {p["instance_id"]: p for p in predictions}
        (folder / preds).write_text(json.dumps(keyed, indent=4))
    if per_instance:
        for row, c in entries:
            logs = folder / "logs" / row["instance_id"]
            logs.mkdir(parents=True)
            report = instance_report(row, c["resolved"])
            (logs / "report.json").write_text(json.dumps(report, indent=4))
            (logs / "test_output.txt").write_text(harness_test_output(row, c["resolved"]))
            (logs / "patch.diff").write_text(c["patch"])
    if run_level:
        ids = [row["instance_id"] for row, _ in entries]
        resolved = [row["instance_id"] for row, c in entries if c["resolved"]]
        (folder / "results").mkdir()
        (folder / "results" / "results.json").write_text(
            json.dumps(run_level_report(ids, resolved), indent=4)
        )
    (folder / "metadata.yaml").write_text(
        "info:\n"
        f"  name: {json.dumps(metadata_name or system)}\n"
        "  site: https://example.org/\n"
        "tags:\n"
        "  checked: false\n"
        "  model:\n"
        f"  - {json.dumps(entries[0][1]['model_name_or_path'])}\n"
    )
    if shared is not None:
        source = shared / "trajectories" / system
        if source.is_dir():
            shutil.copytree(source, folder / "trajs")
    return folder
