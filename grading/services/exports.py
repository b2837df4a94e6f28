"""Export `gagar.v2` advantages (method §7) as Parquet, JSON Lines or CSV, with a manifest.

Three tables: `advantages_attempts.<ext>` (one row per attempt), `advantages_groups.<ext>` (one
row per group) and `lambda_cap.<ext>` (how often λ_max bound, per step), each with its JSON
Schema, plus a dataset card (`README.md`, whose declared features `datasets.load_dataset` reads
from the folder) and `manifest.json`. Groups are refreshed and streamed in batches by primary
key, so memory holds one batch, never a run. Before a batch is written its invariants are
checked (Σ A' ≈ 0 per group, sign(A') = sign(A), excluded attempts at 0): an export that would
break them raises `ExportInvariantError` and leaves no finished files behind (outputs are
written under a temporary name and renamed).
"""

from __future__ import annotations

import csv
import json
import logging
import math
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, Literal

import pyarrow as pa
import pyarrow.parquet as pq
from django.db.models import Q
from django.utils import timezone

from grading.domain.advantage_columns import (
    ATTEMPT_SCHEMA,
    GROUP_SCHEMA,
    LAMBDA_CAP_SCHEMA,
    SCHEMA_VERSION,
)
from grading.domain.contracts import (
    CardConfig,
    as_csv,
    columns_table,
    dataset_card,
    json_schema,
)
from grading.domain.hostile_text import csv_cell
from grading.models import GraderConfig, Group, GroupAdvantages
from grading.selectors.gate import (
    grader_approval_state,
    grader_fit_artefact,
    grader_fit_version,
    graders_of_groups,
)
from grading.selectors.synthetic import synthetic_manifest
from grading.selectors.training import (
    advantages_of_run,
    attempt_rows,
    group_row,
    lambda_cap_report,
)
from grading.services.advantages import AdvantageParams, group_advantages_refresh

Format = Literal["parquet", "jsonl", "csv"]
FORMATS: tuple[Format, ...] = ("parquet", "jsonl", "csv")
BATCH_GROUPS = 500
# Σ A' over a group is a sum of ≤ G doubles of size ≤ 1: rounding stays far below this.
SUM_TOLERANCE = 1e-9


logger = logging.getLogger("gagar.export")


def export_logged(kind: str, fmt: Format, started: float, result: ExportResult) -> ExportResult:
    """One structured log line per finished export (command, API or dashboard download)."""
    logger.info(
        "export written",
        extra={
            "event": "export.written",
            "kind": kind,
            "format": fmt,
            "schema": result.manifest.get("schema"),
            "counts": result.counts,
            "duration_ms": round((time.monotonic() - started) * 1000),
        },
    )
    return result


class ExportInvariantError(Exception):
    pass


@dataclass
class ExportResult:
    directory: Path
    files: dict[str, str]
    counts: dict[str, int] = field(default_factory=dict)
    manifest: dict[str, Any] = field(default_factory=dict)


class TableWriter:
    """One output table in one format, written batch by batch to `<path>.partial`."""

    def __init__(self, path: Path, fmt: Format, schema: pa.Schema) -> None:
        self.path, self.fmt, self.schema = path, fmt, schema
        columns = schema.names
        self.partial = path.with_name(path.name + ".partial")
        self.rows = 0
        self._parquet: pq.ParquetWriter | None = None
        self._file: IO[str] | None = None
        self._csv: Any = None
        if fmt == "parquet":
            self._parquet = pq.ParquetWriter(self.partial, self.schema)
        else:
            self._file = self.partial.open("w", encoding="utf-8", newline="")
            if fmt == "csv":
                self._csv = csv.DictWriter(self._file, fieldnames=list(columns))
                self._csv.writeheader()

    def write(self, rows: list[dict[str, Any]]) -> None:
        if not rows:
            return
        self.rows += len(rows)
        if self._parquet is not None:
            table = pa.Table.from_pylist(rows, schema=self.schema)
            self._parquet.write_table(table)
        elif self._csv is not None:
            self._csv.writerows({k: _csv_cell(v) for k, v in r.items()} for r in rows)
        else:
            assert self._file is not None
            self._file.writelines(json.dumps(r, allow_nan=False) + "\n" for r in rows)

    def close(self, *, keep: bool) -> None:
        if self._parquet is not None:
            self._parquet.close()
        if self._file is not None:
            self._file.close()
        if keep:
            self.partial.replace(self.path)
        else:
            self.partial.unlink(missing_ok=True)


def _csv_cell(value: Any) -> Any:
    # Empty cells for nulls (pandas reads them back as NaN); nested values as JSON text.
    if value is None:
        return ""
    if isinstance(value, list | dict):
        return json.dumps(value, allow_nan=False)
    # Text a spreadsheet would run as a formula is prefixed with "'" (CSV only).
    return csv_cell(value)


def check_invariants(head: dict[str, Any], rows: list[dict[str, Any]]) -> None:
    """method §4 invariants of one group's rows; raises ExportInvariantError naming the group."""
    where = f"group {head['group_id']} ({head['run']} step {head['step']}, task {head['task_id']})"
    total = 0.0
    for r in rows:
        a, a2 = r["adv_grpo"], r["adv_gagar"]
        if not (math.isfinite(a) and math.isfinite(a2)):
            raise ExportInvariantError(f"{where}: non-finite advantage in {r['attempt_id']}")
        if not r["included"]:
            if a != 0 or a2 != 0 or r["reward_equivalent"] is not None:
                raise ExportInvariantError(
                    f"{where}: excluded attempt {r['attempt_id']} has a non-zero advantage"
                )
            continue
        total += a2
        if (a > 0) != (a2 > 0) or (a < 0) != (a2 < 0):
            raise ExportInvariantError(
                f"{where}: attempt {r['attempt_id']} changed sign (A={a!r}, A'={a2!r})"
            )
    if abs(total) > SUM_TOLERANCE:
        raise ExportInvariantError(f"{where}: Σ A' = {total!r}, not 0")


def _batches(qs: Any, size: int) -> Iterator[list[GroupAdvantages]]:
    """Keyset pagination by group id: each batch is one query, memory stays one batch."""
    last = 0
    while True:
        batch = list(qs.filter(group_id__gt=last).order_by("group_id")[:size])
        if not batch:
            return
        yield batch
        last = batch[-1].group_id


def _group_ids(run_name: str, step: int | None, size: int) -> Iterator[list[int]]:
    qs = Group.objects.filter(step__run__name=run_name)
    if step is not None:
        qs = qs.filter(step__number=step)
    last = 0
    while True:
        ids = list(qs.filter(pk__gt=last).order_by("pk").values_list("pk", flat=True)[:size])
        if not ids:
            return
        yield ids
        last = ids[-1]


@dataclass(frozen=True)
class Table:
    """One table of an export: its file stem, `datasets` configuration and row schema."""

    stem: str
    schema: pa.Schema
    title: str
    default: bool = False

    def file(self, fmt: Format) -> str:
        return f"{self.stem}.{fmt}"

    def schema_file(self) -> str:
        return f"{self.stem}.schema.json"

    def json_schema(self, version: str) -> dict[str, Any]:
        return json_schema(
            self.schema,
            id_=f"urn:gagar:schema:{version}:{self.stem}",
            title=f"{version} {self.stem}",
            description=self.title,
        )


ADVANTAGE_TABLES = (
    Table("advantages_attempts", ATTEMPT_SCHEMA, "One row per attempt.", default=True),
    Table("advantages_groups", GROUP_SCHEMA, "One row per group."),
    Table("lambda_cap", LAMBDA_CAP_SCHEMA, "How often λ_max bound, per run and step."),
)


def write_contract(
    *,
    out_dir: Path,
    fmt: Format,
    version: str,
    tables: tuple[Table, ...],
    pretty_name: str,
    about: str,
) -> dict[str, str]:
    """The export's contract beside its data: a JSON Schema per table and a Hugging Face
    dataset card whose declared features keep every column's type (a JSON Lines column whose
    values are all null still loads as its type). Returns the files written, by role."""
    written: dict[str, str] = {}
    for t in tables:
        text = json.dumps(t.json_schema(version), indent=2, ensure_ascii=False) + "\n"
        (out_dir / t.schema_file()).write_text(text, encoding="utf-8")
        written[f"{t.stem}_schema"] = t.schema_file()
    body = [f"# {pretty_name}", "", about, ""]
    body.append(f"Format `{version}`, {fmt}. Load with `datasets.load_dataset(<this folder>)`.")
    for t in tables:
        body += ["", f"## `{t.stem}`" + (" (default)" if t.default else ""), "", t.title, ""]
        body.append(columns_table(t.schema))
    card = dataset_card(
        pretty_name=pretty_name,
        configs=[
            CardConfig(
                t.stem, t.file(fmt), as_csv(t.schema) if fmt == "csv" else t.schema, t.default
            )
            for t in tables
        ],
        body="\n".join(body),
        tags=["gagar", version],
    )
    (out_dir / "README.md").write_text(card, encoding="utf-8")
    written["card"] = "README.md"
    return written


@dataclass
class _AdvantageWriters:
    attempts: TableWriter
    groups: TableWriter
    cap: TableWriter
    fallback: int = 0
    capped: int = 0

    @classmethod
    def open(cls, out_dir: Path, fmt: Format) -> _AdvantageWriters:
        a, g, c = (TableWriter(out_dir / t.file(fmt), fmt, t.schema) for t in ADVANTAGE_TABLES)
        return cls(attempts=a, groups=g, cap=c)

    def close(self, *, keep: bool) -> None:
        for w in (self.attempts, self.groups, self.cap):
            w.close(keep=keep)

    def write_batch(self, batch: list[GroupAdvantages]) -> None:
        """Check each group's invariants, then write its rows (nothing of a failing batch)."""
        group_rows, rows = [], []
        for ga in batch:
            head = group_row(ga)
            own = attempt_rows(ga, head)
            check_invariants(head, own)
            group_rows.append(head)
            rows.extend(own)
            self.fallback += ga.fallback
            self.capped += ga.capped
        self.attempts.write(rows)
        self.groups.write(group_rows)

    def counts(self) -> dict[str, int]:
        return {
            "groups": self.groups.rows,
            "attempts": self.attempts.rows,
            "fallback_groups": self.fallback,
            "capped_groups": self.capped,
            "lambda_cap_rows": self.cap.rows,
        }


def _configuration(config: GraderConfig, params: AdvantageParams) -> dict[str, Any]:
    return {
        "grader_config": config.name,
        "backend": config.backend,
        "model": config.model,
        "prompt_version": config.prompt_version,
        "temperature": config.temperature,
        "seed": config.seed,
        "advantage_params": params.as_json(),
        # The fitted artefact it grades with (analysis backend) and its gate decision.
        "analysis_fit": grader_fit_artefact(
            config=config, version=grader_fit_version(config=config)
        ),
        "approval": grader_approval_state(config=config).as_json(),
    }


def _graders(run_name: str, step: int | None, config: GraderConfig) -> list[dict[str, Any]]:
    """The configuration's fit versions that graded the exported groups (`graders_of_groups`)."""
    groups = Q(step__run__name=run_name)
    if step is not None:
        groups &= Q(step__number=step)
    return graders_of_groups(groups=groups, config=config)


def advantages_export(
    *,
    run_name: str,
    step: int | None,
    fmt: Format,
    out_dir: Path,
    config: GraderConfig,
    params: AdvantageParams,
    batch_groups: int = BATCH_GROUPS,
    on_groups: Callable[[int], None] | None = None,
) -> ExportResult:
    """Refresh then write the advantages of a run (or one step); `on_groups(n)` reports progress."""
    if fmt not in FORMATS:
        raise ValueError(f"unknown format {fmt!r}; use one of {', '.join(FORMATS)}")
    out_dir.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    # Bring every group up to date first, so the export reflects the newest verdicts.
    for ids in _group_ids(run_name, step, batch_groups):
        group_advantages_refresh(group_ids=ids, config=config, params=params)

    writers = _AdvantageWriters.open(out_dir, fmt)
    ok = False
    try:
        qs = advantages_of_run(run_name=run_name, step=step, config=config, params_hash=params.key)
        for batch in _batches(qs, batch_groups):
            try:
                writers.write_batch(batch)
            except ExportInvariantError as exc:
                logger.warning(
                    "export refused",
                    extra={"event": "export.refused", "kind": "advantages", "reason": str(exc)},
                )
                raise
            if on_groups:
                on_groups(len(batch))
        writers.cap.write(
            [
                r
                for r in lambda_cap_report(run_name=run_name, step=step)
                if r["grader_config"] == config.name and r["lambda_max"] == params.lambda_max
            ]
        )
        ok = True
    finally:
        writers.close(keep=ok)
    result = _advantages_manifest(
        out_dir=out_dir,
        fmt=fmt,
        filters={"run": run_name, "step": step},
        counts=writers.counts(),
        configuration=_configuration(config, params),
        graders=_graders(run_name, step, config),
    )
    return export_logged("advantages", fmt, started, result)


def _run_scope(filters: dict[str, Any]) -> Q:
    q = Q(step__run__name=filters["run"])
    return q & Q(step__number=filters["step"]) if filters.get("step") is not None else q


def _advantages_manifest(
    *,
    out_dir: Path,
    fmt: Format,
    filters: dict[str, Any],
    counts: dict[str, int],
    configuration: dict[str, Any],
    graders: list[dict[str, Any]],
) -> ExportResult:
    files = {t.stem.removeprefix("advantages_"): t.file(fmt) for t in ADVANTAGE_TABLES}
    contract = write_contract(
        out_dir=out_dir,
        fmt=fmt,
        version=SCHEMA_VERSION,
        tables=ADVANTAGE_TABLES,
        pretty_name="GAGAR advantages",
        about="Per-attempt and per-group advantages (A′ = GAGAR, A = GRPO) and the λ-cap "
        "report of one run or step, for one grader configuration and advantage parameters.",
    )
    manifest = {
        "schema": SCHEMA_VERSION,
        "kind": "advantages",
        "created_at": timezone.now().isoformat(),
        "format": fmt,
        "filters": filters,
        "counts": counts,
        "files": files,
        "contract": contract,
        "columns": {
            "attempts": ATTEMPT_SCHEMA.names,
            "groups": GROUP_SCHEMA.names,
            "lambda_cap": LAMBDA_CAP_SCHEMA.names,
        },
        "configurations": [configuration],
        "synthetic": synthetic_manifest(scope=_run_scope(filters)),
        # The fit (id, held-out figures) and approval of every fit version that graded the
        # exported groups: a run pinned to a configuration may span a refit.
        "graders": graders,
        "invariants": {
            "sum_adv_gagar_per_group_abs_max": SUM_TOLERANCE,
            "signs_kept": True,
            "excluded_rows_zero": True,
        },
    }
    (out_dir / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
    return ExportResult(directory=out_dir, files=files, counts=counts, manifest=manifest)
