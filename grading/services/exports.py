"""Export `gagar.v1` advantages (SPEC §7) as Parquet, JSON Lines or CSV, with a manifest.

Three files plus `manifest.json`: `advantages_attempts.<ext>` (one row per attempt),
`advantages_groups.<ext>` (one row per group) and `lambda_cap.<ext>` (how often λ_max bound, per
step). Groups are refreshed and streamed in batches by primary key, so memory holds one batch,
never a run. Before a batch is written its invariants are checked (Σ A' ≈ 0 per group, sign(A')
= sign(A), excluded attempts at 0): an export that would break them raises `ExportInvariantError`
and leaves no finished files behind (outputs are written under a temporary name and renamed).
"""

from __future__ import annotations

import csv
import json
import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, Literal

import pyarrow as pa
import pyarrow.parquet as pq
from django.utils import timezone

from grading.domain.hostile_text import csv_cell
from grading.models import GraderConfig, Group, GroupAdvantages
from grading.selectors_training import (
    ATTEMPT_COLUMNS,
    GROUP_COLUMNS,
    LAMBDA_CAP_COLUMNS,
    SCHEMA_VERSION,
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

_INT = pa.int64()
_FLOAT = pa.float64()
_STR = pa.string()
_BOOL = pa.bool_()
_TYPES: dict[str, pa.DataType] = {
    "step": _INT,
    "group_id": _INT,
    "verdict_id": _INT,
    "n_attempts": _INT,
    "n_valid": _INT,
    "attempt_id": _INT,
    "attempt_index": _INT,
    "tier": _INT,
    "rank_in_tier": _INT,
    "normalize_std": _BOOL,
    "fallback": _BOOL,
    "capped": _BOOL,
    "included": _BOOL,
    **{c: _INT for c in ("groups", "fallback_groups", "groups_with_lambda", "capped_groups")},
    **{
        c: _FLOAT
        for c in (
            "lambda_max",
            "mean_reward",
            "reward_std",
            "lambda_raw",
            "lambda_applied",
            "mean_shift",
            "positive_total_before",
            "positive_total_after",
            "test_reward",
            "reward_used",
            "coefficient",
            "adv_grpo",
            "adv_gagar",
            "reward_equivalent",
            "capped_share",
            "mean_shift_capped",
            "mean_lambda_raw",
        )
    },
}


def _schema(columns: tuple[str, ...]) -> pa.Schema:
    return pa.schema([(c, _TYPES.get(c, _STR)) for c in columns])


class ExportInvariantError(Exception):
    pass


@dataclass
class ExportResult:
    directory: Path
    files: dict[str, str]
    counts: dict[str, int] = field(default_factory=dict)
    manifest: dict[str, Any] = field(default_factory=dict)


class _Writer:
    """One output table in one format, written batch by batch to `<path>.partial`."""

    def __init__(
        self,
        path: Path,
        fmt: Format,
        columns: tuple[str, ...],
        schema: pa.Schema | None = None,
    ) -> None:
        self.path, self.fmt, self.columns = path, fmt, columns
        # Other exports (review.analytics) pass their own schema, e.g. with list columns.
        self.schema = schema if schema is not None else _schema(columns)
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
    """SPEC §4 invariants of one group's rows; raises ExportInvariantError naming the group."""
    where = f"group {head['group_id']} ({head['run']} step {head['step']}, task {head['task_id']})"
    total = 0.0
    for r in rows:
        a, a2 = r["adv_grpo"], r["adv_gagar"]
        if not (math.isfinite(a) and math.isfinite(a2)):
            raise ExportInvariantError(
                f"{where}: non-finite advantage in {r['attempt_external_id']}"
            )
        if not r["included"]:
            if a != 0 or a2 != 0 or r["reward_equivalent"] is not None:
                raise ExportInvariantError(
                    f"{where}: excluded attempt {r['attempt_external_id']} has a non-zero advantage"
                )
            continue
        total += a2
        if (a > 0) != (a2 > 0) or (a < 0) != (a2 < 0):
            raise ExportInvariantError(
                f"{where}: attempt {r['attempt_external_id']} changed sign (A={a!r}, A'={a2!r})"
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
    # Bring every group up to date first, so the export reflects the newest verdicts.
    for ids in _group_ids(run_name, step, batch_groups):
        group_advantages_refresh(group_ids=ids, config=config, params=params)

    ext = fmt
    attempts = _Writer(out_dir / f"advantages_attempts.{ext}", fmt, ATTEMPT_COLUMNS)
    groups = _Writer(out_dir / f"advantages_groups.{ext}", fmt, GROUP_COLUMNS)
    cap = _Writer(out_dir / f"lambda_cap.{ext}", fmt, LAMBDA_CAP_COLUMNS)
    writers = [attempts, groups, cap]
    fallback = capped = 0
    ok = False
    try:
        qs = advantages_of_run(run_name=run_name, step=step, config=config, params_hash=params.key)
        for batch in _batches(qs, batch_groups):
            group_rows, rows = [], []
            for ga in batch:
                head = group_row(ga)
                own = attempt_rows(ga, head)
                check_invariants(head, own)
                group_rows.append(head)
                rows.extend(own)
                fallback += ga.fallback
                capped += ga.capped
            attempts.write(rows)
            groups.write(group_rows)
            if on_groups:
                on_groups(len(batch))
        cap.write(
            [
                r
                for r in lambda_cap_report(run_name=run_name, step=step)
                if r["grader_config"] == config.name and r["lambda_max"] == params.lambda_max
            ]
        )
        ok = True
    finally:
        for w in writers:
            w.close(keep=ok)

    counts = {
        "groups": groups.rows,
        "attempts": attempts.rows,
        "fallback_groups": fallback,
        "capped_groups": capped,
        "lambda_cap_rows": cap.rows,
    }
    files = {
        "attempts": attempts.path.name,
        "groups": groups.path.name,
        "lambda_cap": cap.path.name,
    }
    manifest = {
        "schema": SCHEMA_VERSION,
        "kind": "advantages",
        "created_at": timezone.now().isoformat(),
        "format": fmt,
        "filters": {"run": run_name, "step": step},
        "counts": counts,
        "files": files,
        "columns": {"attempts": list(ATTEMPT_COLUMNS), "groups": list(GROUP_COLUMNS)},
        "configurations": [
            {
                "grader_config": config.name,
                "backend": config.backend,
                "model": config.model,
                "prompt_version": config.prompt_version,
                "temperature": config.temperature,
                "seed": config.seed,
                "advantage_params": params.as_json(),
            }
        ],
        "invariants": {
            "sum_adv_gagar_per_group_abs_max": SUM_TOLERANCE,
            "signs_kept": True,
            "excluded_rows_zero": True,
        },
    }
    (out_dir / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
    return ExportResult(directory=out_dir, files=files, counts=counts, manifest=manifest)
