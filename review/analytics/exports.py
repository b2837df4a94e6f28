"""Export calibrated tier labels (method §7) as JSON Lines, CSV or Parquet, with a manifest.

One row per attempt and grader configuration (one row per attempt with `--config`): ids,
status, test reward, the configuration's verdict (tier, rank, weighted score), each human tier
under a pseudonymous reviewer id, the consensus tier, the calibrated tier and P(T1..T3), the
number of reviews, the latest adjudication of a disagreement flag (outcome and tier) and
provenance. Attempts are streamed by primary key in batches (six queries per batch), so memory
holds one batch; files are written under a temporary name and renamed.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
from django.conf import settings
from django.db.models import Q
from django.utils import timezone

from grading.models import Attempt, GraderConfig
from grading.services.exports import FORMATS, ExportResult, Format
from grading.services.exports import _Writer as TableWriter
from review.analytics.filters import Filters
from review.analytics.label_refresh import labels_refresh, labels_stale
from review.analytics.sharing import fan_out
from review.models import (
    Assignment,
    CalibratedLabel,
    CalibrationFit,
    ConsensusLabel,
    Disagreement,
    Label,
)

SCHEMA_VERSION = "gagar.labels.v1"
BATCH = 2000
HUMAN_TIER = pa.struct(
    [("reviewer", pa.string()), ("tier", pa.string()), ("rank_in_tier", pa.int64())]
)
LABEL_SCHEMA = pa.schema(
    [
        ("run", pa.string()),
        ("step", pa.int64()),
        ("task_id", pa.string()),
        ("group_id", pa.int64()),
        ("attempt_id", pa.int64()),
        ("attempt_external_id", pa.string()),
        ("attempt_index", pa.int64()),
        ("status", pa.string()),
        ("test_reward", pa.float64()),
        ("grader_config", pa.string()),
        ("grader_run_id", pa.int64()),
        ("grader_tier", pa.int64()),
        ("grader_rank_in_tier", pa.int64()),
        ("grader_weighted_score", pa.float64()),
        ("human_tiers", pa.list_(HUMAN_TIER)),
        ("n_reviews", pa.int64()),
        ("consensus_tier", pa.int64()),
        ("consensus_method", pa.string()),
        ("calibrated_tier", pa.int64()),
        ("p_t1", pa.float64()),
        ("p_t2", pa.float64()),
        ("p_t3", pa.float64()),
        ("calibration_held_out", pa.bool_()),
        # The latest resolved adjudication of a disagreement flag on this attempt, if any.
        ("adjudication", pa.string()),
        ("adjudicated_tier", pa.string()),
        ("provenance", pa.string()),
    ]
)
LABEL_COLUMNS = tuple(LABEL_SCHEMA.names)


def reviewer_pseudonym(user_id: int) -> str:
    """Stable per installation, not reversible without the secret key."""
    digest = hmac.new(settings.SECRET_KEY.encode(), f"reviewer:{user_id}".encode(), hashlib.sha256)
    return "r_" + digest.hexdigest()[:12]


def _attempt_values(filters: Filters) -> Any:
    return Attempt.objects.filter(filters.group_q("group__")).values(
        "id",
        "external_id",
        "index",
        "status",
        "test_reward",
        "group_id",
        "group__step__run__name",
        "group__step__number",
        "group__task__external_id",
    )


def attempt_batches(filters: Filters, size: int) -> Iterator[list[Any]]:
    """Keyset pagination by attempt id over the filtered groups: one query per batch."""
    qs = _attempt_values(filters)
    last = 0
    while True:
        batch = list(qs.filter(pk__gt=last).order_by("pk")[:size])
        if not batch:
            return
        yield batch
        last = batch[-1]["id"]


def _humans(ids: list[int], filters: Filters) -> dict[int, list[dict[str, Any]]]:
    def fetch(wanted: set[int]) -> Iterator[tuple[int, int, dict[str, Any]]]:
        q = Q(
            candidate__attempt_id__in=wanted,
            candidate__assignment__status=Assignment.Status.SUBMITTED,
        )
        if filters.campaign is not None:
            q &= Q(candidate__assignment__campaign_id=filters.campaign)
        for attempt_id, assignment_id, reviewer, tier, rank in (
            Label.objects.filter(q)
            .exclude(tier="")
            .order_by("candidate__assignment__reviewer_id", "pk")
            .values_list(
                "candidate__attempt_id",
                "candidate__assignment_id",
                "candidate__assignment__reviewer_id",
                "tier",
                "rank_in_tier",
            )
        ):
            yield (
                attempt_id,
                assignment_id,
                {"reviewer": reviewer_pseudonym(reviewer), "tier": tier, "rank_in_tier": rank},
            )

    # A label of a patch is a label of every attempt that submitted it.
    return fan_out(attempt_ids=ids, fetch=fetch)


def _adjudications(ids: list[int], filters: Filters) -> dict[int, Disagreement]:
    def fetch(wanted: set[int]) -> Iterator[tuple[int, int, Disagreement]]:
        q = Q(candidate__attempt_id__in=wanted, status=Disagreement.Status.RESOLVED)
        if filters.campaign is not None:
            q &= Q(candidate__assignment__campaign_id=filters.campaign)
        for flag in (
            Disagreement.objects.filter(q)
            .select_related("candidate")
            .order_by("resolved_at", "pk")
            .only("resolution", "adjudicated_tier", "resolved_at", "candidate__attempt_id")
        ):
            # Keyed by flag, not assignment: every flag counts, the latest wins below.
            yield flag.candidate.attempt_id, flag.pk, flag

    return {aid: flags[-1] for aid, flags in fan_out(attempt_ids=ids, fetch=fetch).items()}


def _rows(
    batch: list[dict[str, Any]], fits: list[CalibrationFit | None], filters: Filters
) -> list[dict[str, Any]]:
    ids = [a["id"] for a in batch]
    humans = _humans(ids, filters)
    adjudicated = _adjudications(ids, filters)
    cons = {c.attempt_id: c for c in ConsensusLabel.objects.filter(attempt_id__in=ids)}
    cal: dict[tuple[int, int], CalibratedLabel] = {
        (c.fit_id, c.attempt_id): c
        for c in CalibratedLabel.objects.filter(attempt_id__in=ids, fit__in=[f for f in fits if f])
    }
    grades = {
        (g.run_id, g.attempt_id): g
        for g in _grades_for({c.grader_run_id for c in cal.values()}, ids)
    }
    rows = []
    for a in batch:
        c = cons.get(a["id"])
        adj = adjudicated.get(a["id"])
        for fit in fits:
            cl = cal.get((fit.pk, a["id"])) if fit else None
            g = grades.get((cl.grader_run_id, a["id"])) if cl else None
            rows.append(
                {
                    "run": a["group__step__run__name"],
                    "step": a["group__step__number"],
                    "task_id": a["group__task__external_id"],
                    "group_id": a["group_id"],
                    "attempt_id": a["id"],
                    "attempt_external_id": a["external_id"],
                    "attempt_index": a["index"],
                    "status": a["status"],
                    "test_reward": a["test_reward"],
                    "grader_config": fit.config.name if fit else None,
                    "grader_run_id": cl.grader_run_id if cl else None,
                    "grader_tier": g.tier if g else None,
                    "grader_rank_in_tier": g.rank_in_tier if g else None,
                    "grader_weighted_score": cl.weighted_score if cl else None,
                    "human_tiers": humans.get(a["id"], []),
                    "n_reviews": c.n_reviews if c else 0,
                    "consensus_tier": c.tier if c else None,
                    "consensus_method": c.method if c else None,
                    "calibrated_tier": cl.tier if cl else None,
                    "p_t1": cl.p_t1 if cl else None,
                    "p_t2": cl.p_t2 if cl else None,
                    "p_t3": cl.p_t3 if cl else None,
                    "calibration_held_out": cl.held_out if cl else None,
                    "adjudication": adj.resolution if adj else None,
                    "adjudicated_tier": (adj.adjudicated_tier or None) if adj else None,
                    "provenance": json.dumps(
                        {
                            "grader_run": cl.grader_run_id if cl else None,
                            "calibration_computed_at": fit.computed_at.isoformat() if fit else None,
                            "consensus": c.method if c else None,
                        }
                    ),
                }
            )
    return rows


def _grades_for(run_ids: set[int], attempt_ids: list[int]) -> Any:
    from grading.models import CandidateGrade

    return CandidateGrade.objects.filter(run_id__in=run_ids, attempt_id__in=attempt_ids).only(
        "run_id", "attempt_id", "tier", "rank_in_tier"
    )


def _fits(config: GraderConfig | None) -> list[CalibrationFit | None]:
    fits_qs = CalibrationFit.objects.select_related("config").order_by("config__name")
    if config is not None:
        fits_qs = fits_qs.filter(config=config)
    return list(fits_qs) or [None]


def labels_page(
    *, filters: Filters, config: GraderConfig | None, offset: int, limit: int
) -> tuple[int, list[dict[str, Any]]]:
    """One page of label rows (the export's rows) over attempts in id order, and the number of
    attempts matching: for the API's paginated list. Refreshes consensus and calibration first
    when the data changed, as the export does."""
    if labels_stale():
        labels_refresh()
    qs = _attempt_values(filters).order_by("pk")
    batch = list(qs[offset : offset + limit])
    return qs.count(), _rows(batch, _fits(config), filters)


def labels_export(
    *,
    fmt: Format,
    out_dir: Path,
    filters: Filters | None = None,
    config: GraderConfig | None = None,
    batch: int = BATCH,
    on_attempts: Callable[[int], None] | None = None,
) -> ExportResult:
    """Refresh consensus and calibration if the data changed, then write the labels."""
    if fmt not in FORMATS:
        raise ValueError(f"unknown format {fmt!r}; use one of {', '.join(FORMATS)}")
    filters = filters or Filters()
    if labels_stale():
        labels_refresh()
    fits = _fits(config)
    out_dir.mkdir(parents=True, exist_ok=True)
    writer = TableWriter(out_dir / f"labels.{fmt}", fmt, LABEL_COLUMNS, schema=LABEL_SCHEMA)
    counts = {"rows": 0, "attempts": 0, "reviewed_attempts": 0, "calibrated_rows": 0}
    ok = False
    try:
        for attempts in attempt_batches(filters, batch):
            rows = _rows(attempts, fits, filters)
            writer.write(rows)
            counts["attempts"] += len(attempts)
            counts["reviewed_attempts"] += len({r["attempt_id"] for r in rows if r["n_reviews"]})
            counts["calibrated_rows"] += sum(r["calibrated_tier"] is not None for r in rows)
            if on_attempts:
                on_attempts(len(attempts))
        ok = True
    finally:
        writer.close(keep=ok)
    counts["rows"] = writer.rows
    files = {"labels": writer.path.name}
    manifest = {
        "schema": SCHEMA_VERSION,
        "kind": "calibrated_labels",
        "created_at": timezone.now().isoformat(),
        "format": fmt,
        "filters": {**filters.as_json(), "config": config.name if config else None},
        "counts": counts,
        "files": files,
        "columns": list(LABEL_COLUMNS),
        "consensus": "median tier of submitted human labels (a split vote takes the worse tier); "
        "one-coin Dawid-Skene for candidates with 3+ tier ratings; a majority of 'exploit' "
        "labels gives no tier. The grader never votes.",
        "reviewers": "pseudonymous ids (HMAC of the account id with this installation's key)",
        "configurations": [
            {
                "grader_config": f.config.name,
                "backend": f.config.backend,
                "model": f.config.model,
                "prompt_version": f.config.prompt_version,
                "temperature": f.config.temperature,
                "seed": f.config.seed,
                "calibration": {
                    "method": f.method,
                    "n_labelled": f.n_labelled,
                    "n_scored": f.n_scored,
                    "n_folds": f.n_folds,
                    "held_out_mae": f.held_out_mae,
                    "held_out_accuracy": f.held_out_accuracy,
                    "note": f.reason,
                    "computed_at": f.computed_at.isoformat(),
                },
            }
            for f in fits
            if f is not None
        ],
    }
    (out_dir / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
    return ExportResult(directory=out_dir, files=files, counts=counts, manifest=manifest)
