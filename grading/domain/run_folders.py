"""A system's run folder as the swe-bench experiments repository lays it out.

    evaluation/<split>/<system>/
        all_preds.jsonl  (or preds.json)      predictions
        results/results.json                  run-level report (§2a)
        logs/<instance_id>/report.json        per-instance report (§2c), with tests_status
        logs/<instance_id>/test_output.txt    the tests' output (bounded: `test_outputs`)
        logs/<instance_id>/patch.diff         the patch as the harness applied it (not read:
                                              the prediction is the source of the patch)
        trajs/<instance_id>.traj              trajectory
        metadata.yaml                         `info.name` (or the older top-level `name`);
                                              a few hundred bytes: one over 64 KiB, with
                                              aliases or deep nesting is refused

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
from grading.domain.wording import shown

PREDICTIONS = ("all_preds.jsonl", "preds.json")
RUN_REPORTS = ("results/results.json", "results.json", "result.json")
METADATA = "metadata.yaml"
# The experiments repository's metadata files are a few hundred bytes; this leaves room for
# any real one and keeps a stray large file from being parsed.
MAX_METADATA_BYTES = 64 * 1024
MAX_METADATA_DEPTH = 32


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


class _MetadataLoader(yaml.SafeLoader):
    """`yaml.SafeLoader` with flow collections (`[…]`, `{…}`) nested at most
    `MAX_METADATA_DEPTH` deep: PyYAML's scanner takes time quadratic in that depth (5,000
    levels, 10 KB, take 5 seconds; the largest file allowed would take minutes)."""

    def fetch_flow_collection_start(self, TokenClass: Any) -> None:
        if self.flow_level >= MAX_METADATA_DEPTH:
            raise yaml.scanner.ScannerError(
                None, None, f"nested deeper than {MAX_METADATA_DEPTH} levels", self.get_mark()
            )
        super().fetch_flow_collection_start(TokenClass)


def _metadata_text(path: Path) -> str:
    """The file's text, refused unread over `MAX_METADATA_BYTES` (one byte over it is read)."""
    with path.open("rb") as handle:
        data = handle.read(MAX_METADATA_BYTES + 1)
    if len(data) > MAX_METADATA_BYTES:
        raise _problem(
            path,
            None,
            "",
            f"{path.stat().st_size:,} bytes, over the {MAX_METADATA_BYTES:,} a metadata file may "
            "hold (the experiments repository's are a few hundred bytes: `info: {name: …}`); "
            "it was not read",
        )
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        at = data.count(b"\n", 0, exc.start) + 1
        raise _problem(path, at, "", f"not UTF-8 text: {exc}; save it as UTF-8") from exc
    return text


def _metadata_name(path: Path) -> str | None:
    text = _metadata_text(path)
    try:
        # Aliases are refused before anything is built: a metadata file has no use for them,
        # and a few hundred bytes of nested ones ("billion laughs") stand for billions of
        # values. `safe_load` shares an aliased value rather than copying it, but whatever
        # walks the result (repr, json.dumps) would visit every one.
        for event in yaml.parse(text, Loader=_MetadataLoader):
            if isinstance(event, yaml.AliasEvent):
                mark = event.start_mark
                raise _problem(
                    path,
                    mark.line + 1 if mark is not None else None,
                    "",
                    f"an alias (*{event.anchor}): aliases are not allowed in {METADATA}",
                )
        loaded: Any = yaml.load(text, Loader=_MetadataLoader)  # noqa: S506 (a SafeLoader)
    except yaml.YAMLError as exc:
        problem_mark = getattr(exc, "problem_mark", None)
        line = problem_mark.line + 1 if problem_mark is not None else None
        raise _problem(path, line, "", f"not valid YAML: {exc}") from exc
    except RecursionError as exc:
        # Block collections nest without brackets ("- - - x"): the composer recurses.
        raise _problem(path, None, "", "not valid YAML: nested too deep") from exc
    except ValueError as exc:
        # Scalars the safe constructor cannot build: `2024-02-30`, an integer of over 4,300
        # digits.
        raise _problem(path, None, "", f"not valid YAML: {exc}") from exc
    if loaded is None:
        return None
    if not isinstance(loaded, dict):
        raise _problem(
            path,
            1,
            "",
            f"expected a mapping (info: {{name: …}}), not {_yaml_kind(loaded)}",
        )
    info = loaded.get("info")
    name = info.get("name") if isinstance(info, dict) else loaded.get("name")
    if name is None:
        return None
    if not isinstance(name, str) or not name.strip():
        raise _problem(path, None, "info.name" if info else "name", "must be a non-empty string")
    return name.strip()


def _yaml_kind(value: object) -> str:
    if isinstance(value, list):
        return "a list"
    if isinstance(value, str):
        return "a string"
    return f"a {type(value).__name__} value"


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
                f.path, None, "", f"two run folders are both named {shown(f.label)}: rename one"
            )
    return out
