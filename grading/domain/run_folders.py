"""A system's run folder as the swe-bench experiments repository lays it out.

    evaluation/<split>/<system>/
        all_preds.jsonl  (or preds.json)      predictions
        results/results.json                  run-level report (§2a)
        logs/<instance_id>/report.json        per-instance report (§2c), with tests_status
        logs/<instance_id>/test_output.txt    the tests' output
        logs/<instance_id>/patch.diff         the patch as the harness applied it (not read:
                                              the prediction is the source of the patch)
        trajs/<instance_id>.traj              trajectory
        metadata.yaml                         `info.name` (or the older top-level `name`)

Moatless's `evaluations/<run>/` folders (`result.json` at the top, `trajs/<id>.json`) read the
same way. Every part but the predictions is optional; a folder with no report at all is
imported with a note, and its attempts count as not passing.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from grading.domain.records import ImportNote, ImportProblem, ImportProblemError

PREDICTIONS = ("all_preds.jsonl", "preds.json")
RUN_REPORTS = ("results/results.json", "results.json", "result.json")
METADATA = "metadata.yaml"


@dataclass(frozen=True)
class RunFolder:
    path: Path
    predictions: Path
    report: Path | None
    logs: Path | None
    trajectories: Path | None
    name: str | None  # from metadata.yaml
    notes: tuple[ImportNote, ...] = ()

    @property
    def label(self) -> str:
        return self.name or self.path.name


def _problem(path: Path, line: int | None, field: str, message: str) -> ImportProblemError:
    return ImportProblemError(ImportProblem(str(path), line, field, message))


def _metadata_name(path: Path) -> str | None:
    try:
        data: Any = yaml.safe_load(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError as exc:
        raise _problem(path, None, "", f"not UTF-8 text: {exc}") from exc
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = mark.line + 1 if mark is not None else None
        raise _problem(path, line, "", f"not valid YAML: {exc}") from exc
    if data is None:
        return None
    if not isinstance(data, dict):
        raise _problem(path, 1, "", "expected a mapping (info: {name: …})")
    info = data.get("info")
    name = info.get("name") if isinstance(info, dict) else data.get("name")
    if name is None:
        return None
    if not isinstance(name, str) or not name.strip():
        raise _problem(path, None, "info.name" if info else "name", "must be a non-empty string")
    return name.strip()


def read_run_folder(path: Path) -> RunFolder:
    """Find a run folder's parts; a folder without predictions is refused, saying what it has."""
    if not path.is_dir():
        raise _problem(path, None, "", "no such folder")
    found = [path / name for name in PREDICTIONS if (path / name).is_file()]
    if not found:
        systems = sorted(
            p.name for p in path.iterdir() if any((p / n).is_file() for n in PREDICTIONS)
        )
        hint = (
            f"; it holds system folders ({', '.join(systems[:5])}…): give each one with "
            "--run-folder"
            if systems
            else ""
        )
        raise _problem(
            path, None, "", f"no predictions: neither {' nor '.join(PREDICTIONS)} is here{hint}"
        )
    notes: list[ImportNote] = []
    if len(found) > 1:
        notes.append(
            ImportNote(str(path), None, f"both {' and '.join(PREDICTIONS)}; read {found[0].name}")
        )
    report = next((path / r for r in RUN_REPORTS if (path / r).is_file()), None)
    logs = path / "logs" if (path / "logs").is_dir() else None
    trajs = next((path / t for t in ("trajs", "trajectories") if (path / t).is_dir()), None)
    if report is None and logs is None:
        notes.append(
            ImportNote(
                str(path),
                None,
                "no evaluation report (results/results.json or logs/<id>/report.json): "
                "its attempts count as not passing",
            )
        )
    meta = path / METADATA
    name = _metadata_name(meta) if meta.is_file() else None
    return RunFolder(path, found[0], report, logs, trajs, name, tuple(notes))


def read_run_folders(paths: list[Path]) -> list[RunFolder]:
    """Every folder, with labels made distinct: runs of one system often share their
    metadata name, so a shared name gets its folder's name added."""
    folders = [read_run_folder(p) for p in paths]
    counts = Counter(f.label for f in folders)
    out = []
    for f in folders:
        if counts[f.label] > 1 and f.name is not None:
            f = RunFolder(
                f.path,
                f.predictions,
                f.report,
                f.logs,
                f.trajectories,
                f"{f.name} [{f.path.name}]",
                f.notes,
            )
        out.append(f)
    again = Counter(f.label for f in out)
    for f in out:
        if again[f.label] > 1:
            raise _problem(
                f.path, None, "", f"two run folders are both named {f.label!r}: rename one"
            )
    return out
