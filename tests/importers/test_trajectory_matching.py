"""A trajectory file goes to its own system's attempt, never to every attempt of its instance:
systems sharing a trajectories folder, on the real shared files used where they lie
(../shared/data/swebench-groups/trajectories: `<system>/<id>.traj`, `<system>/<id>.json`,
`<system>/<id>/debug_agent_write_patch_1.json`)."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command

from grading.models import Trajectory
from tests.importers.swebench_files import by_system, load_rows, prediction, write_tasks

pytestmark = pytest.mark.django_db


def manifest(shared: Path) -> list[dict[str, Any]]:
    return json.loads((shared / "trajectories" / "MANIFEST.json").read_text())


def attached() -> set[tuple[str, str]]:
    """(instance, system) of every stored trajectory; a file stored twice shows in the count."""
    rows = list(
        Trajectory.objects.values_list("attempt__group__task__external_id", "attempt__agent_system")
    )
    assert len(rows) == len(set(rows))
    return set(rows)


def import_systems(
    shared: Path, root: Path, folders: dict[str, Path], labels: dict[str, str] | None = None
) -> str:
    """One predictions file per system (all_preds.jsonl, as the tools write it), each with
    the trajectories folder `folders` gives it, labelled with the system's name unless
    `labels` says otherwise (a label of "" leaves it out: the model names the system)."""
    rows = load_rows(shared)
    root.mkdir(parents=True, exist_ok=True)
    args = ["--tasks", str(write_tasks(rows, root / "tasks.jsonl")), "--no-progress"]
    systems = by_system(rows)
    use_labels = labels is None or any(labels.values())
    for n, system in enumerate(sorted(folders)):
        preds = root / f"system-{n}.jsonl"
        preds.write_text("".join(json.dumps(prediction(r, c)) + "\n" for r, c in systems[system]))
        args += ["--predictions", str(preds), "--trajectories", str(folders[system])]
        if use_labels:
            args += ["--label", (labels or {}).get(system, system)]
    out = io.StringIO()
    call_command("import", "swebench", *args, stdout=out, stderr=io.StringIO())
    return out.getvalue()


def test_one_folder_of_every_systems_trajectories_used_in_place(
    shared_data: Path, tmp_path: Path
) -> None:
    """The shared folder itself, given to all eleven systems: each finds its own subfolder."""
    root = shared_data / "trajectories"
    systems = {c["system"] for row in load_rows(shared_data) for c in row["candidates"]}
    import_systems(shared_data, tmp_path, dict.fromkeys(systems, root))
    assert attached() == {(e["instance_id"], e["system"]) for e in manifest(shared_data)}
    assert Trajectory.objects.count() == 15


def test_a_folder_given_to_several_systems_goes_to_the_one_it_is_named_after(
    shared_data: Path, tmp_path: Path
) -> None:
    trajectories = shared_data / "trajectories"
    folders = {
        # Every ACR run given acr-run-1's folder (`<id>/debug_agent_write_patch_1.json`), every
        # SWE-agent run cost_2_1's (`<id>.traj`): their files name nothing else.
        **{
            f"autocoderover/{run}": trajectories / "autocoderover" / "acr-run-1"
            for run in ("acr-run-1", "acr-run-2", "acr-run-3", "acr-val-only", "acr-val-sbfl")
        },
        **{
            f"swe-agent/{run}": trajectories / "swe-agent" / "cost_2_1"
            for run in ("cost_2_1", "cost_2_2", "cost_2_3")
        },
    }
    import_systems(shared_data, tmp_path, folders)
    want = {
        (e["instance_id"], e["system"])
        for e in manifest(shared_data)
        if e["system"].startswith(("autocoderover/", "swe-agent/"))
    }
    assert attached() == want and len(want) == 10


def test_a_shared_folder_goes_by_the_name_or_the_patch_the_file_declares(
    shared_data: Path, tmp_path: Path
) -> None:
    """Labels that name no folder: Moatless files name their evaluation (the model name here),
    SWE-agent files the patch they submitted; a patch two systems share decides nothing."""
    trajectories = shared_data / "trajectories"
    moatless = trajectories / "moatless" / "20240623_moatless_claude-3.5-sonnet"
    sweagent = trajectories / "swe-agent" / "cost_2_1"
    folders = {
        "moatless/20240609_moatless_gpt4o": moatless,
        "moatless/20240617_moatless_gpt-4o-2024-05-13": moatless,
        "moatless/20240623_moatless_claude-3.5-sonnet": moatless,
        "swe-agent/cost_2_1": sweagent,
        "swe-agent/cost_2_2": sweagent,
        "swe-agent/cost_2_3": sweagent,
    }
    labels = {system: f"system {n}" for n, system in enumerate(sorted(folders))}
    out = import_systems(shared_data, tmp_path, folders, labels)

    rows = {r["instance_id"]: r for r in load_rows(shared_data)}

    def patch(instance: str, system: str) -> str:
        return next(c["patch"] for c in rows[instance]["candidates"] if c["system"] == system)

    want, ambiguous = set(), []
    for e in manifest(shared_data):
        if e["system"].startswith("moatless/"):
            want.add((e["instance_id"], labels[e["system"]]))
        elif e["system"] == "swe-agent/cost_2_1":
            mine = patch(e["instance_id"], e["system"])
            others = [patch(e["instance_id"], f"swe-agent/{r}") for r in ("cost_2_2", "cost_2_3")]
            if mine in others:
                ambiguous.append(e["instance_id"])
            else:
                want.add((e["instance_id"], labels[e["system"]]))
    assert attached() == want
    # cost_2_3 submitted the same patch as cost_2_1 for two of the five instances.
    assert len(ambiguous) == 2 and len(want) == 8
    for instance in ambiguous:
        assert f"{sweagent / instance}.traj: this trajectory of {json.dumps(instance)}" in out
        assert "attached to none" in out
