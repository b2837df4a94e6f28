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
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
from django.conf import settings
from django.db.models import F, Q
from django.utils import timezone

from grading.domain.contracts import described, struct
from grading.models import Attempt, GraderConfig
from grading.selectors.gate import graders_of_groups
from grading.selectors.synthetic import SYNTHETIC_KEY, synthetic_manifest
from grading.selectors.training import group_key
from grading.services.exports import (
    FORMATS,
    ExportResult,
    Format,
    Table,
    TableWriter,
    export_logged,
    write_contract,
)
from review.analytics.consensus import (
    CAMPAIGN_SCOPE,
    CONSENSUS_RULE,
    ConsensusSource,
    consensus_source,
)
from review.analytics.filters import Filters
from review.analytics.label_refresh import labels_refresh, labels_stale
from review.analytics.sharing import fan_out
from review.models import (
    Assignment,
    CalibratedLabel,
    CalibrationFit,
    ClaimMark,
    ConsensusLabel,
    Disagreement,
    Label,
)
from review.models.reviewing import CRITERIA

SCHEMA_VERSION = "gagar.labels.v2"
BATCH = 2000
_S, _I, _F, _B = pa.string(), pa.int64(), pa.float64(), pa.bool_()
# One tier encoding everywhere (gagar.v2): a tier is 1–3 or null, and `exploit` says whether the
# label was "exploit / test tampering" (tier null then).
HUMAN_TIER = struct(
    described("reviewer", _S, "Pseudonymous reviewer id."),
    described("tier", _I, "1–3; null for an exploit label.", nullable=True),
    described("exploit", _B, "Labelled exploit / test tampering."),
    described("rank_in_tier", _I, "Rank within the tier.", nullable=True),
    described(
        "rubric",
        struct(*(described(c, _I, "1–5 or null.", nullable=True) for c in CRITERIA)),
        "The five rubric scores as stored (pre-filled ones included; see rubric_prefilled).",
    ),
    described(
        "rubric_prefilled",
        pa.list_(_S),
        "Criteria whose score was left as the tier pre-filled it, never set or confirmed by "
        "the reviewer: per-criterion statistics leave them out.",
    ),
)
CLAIM_MARK = struct(
    described("reviewer", _S, "Pseudonymous reviewer id."),
    described("grader_config", _S, "The configuration of the grader run whose claim it is."),
    described("grader_run_id", _S, "The grader run."),
    described("evidence_id", _S, "The cited `code` evidence in that run's verdict."),
    described(
        "criterion",
        _S,
        "What the claim backs: a rubric criterion, severe_issue, tier or reorder.",
    ),
    described("mark", _S, "correct, wrong or unsure (can't tell)."),
)
PROVENANCE = struct(
    described("grader_run", _S, "The grader run the calibration used.", nullable=True),
    described("calibration_computed_at", _S, "When the fit was made.", nullable=True),
    described(
        "grader_fit_version",
        _S,
        "The analysis fit that made the grader run's verdict (manifest `graders` has its "
        "held-out figures and approval); null for backends without a fit.",
        nullable=True,
    ),
    described("consensus", _S, "How the consensus was reached.", nullable=True),
)
LABEL_SCHEMA = pa.schema(
    [
        described("run", _S, "The run's name."),
        described("step", _I, "The training step."),
        described("task_id", _S, "The task's external id."),
        described("group_id", _S, "The group's external id (`<run>/<step>/<task_id>` if none)."),
        described("group_db_id", _I, "The group's database id (extra)."),
        described("attempt_id", _S, "The bundle's attempt id (unique within its group)."),
        described("attempt_db_id", _I, "The attempt's database id (extra)."),
        described("attempt_index", _I, "Position in the group."),
        described("status", _S, "The attempt's status."),
        described("test_reward", _F, "The test reward."),
        described("grader_config", _S, "The grader configuration of this row.", nullable=True),
        described("grader_run_id", _S, "The grader run calibrated.", nullable=True),
        described("grader_tier", _I, "The grader's tier 1–3.", nullable=True),
        described(
            "grader_exploit_suspected", _B, "The grader suspected an exploit.", nullable=True
        ),
        described("grader_rank_in_tier", _I, "The grader's rank in its tier.", nullable=True),
        described("grader_weighted_score", _F, "The rubric's weighted score.", nullable=True),
        described(
            "human_tiers",
            pa.list_(HUMAN_TIER),
            "Each reviewer's submitted label (their first review: what the consensus uses).",
        ),
        described(
            "sentinel_tiers",
            pa.list_(HUMAN_TIER),
            "Labels from self-consistency sentinels: the same reviewer's second, blind review "
            "of the group, kept apart (never in the consensus).",
        ),
        described("n_reviews", _I, "Submitted reviews of this attempt's patch."),
        described("consensus_tier", _I, "Human consensus tier 1–3.", nullable=True),
        described("consensus_exploit", _B, "The consensus is 'exploit'.", nullable=True),
        described("consensus_method", _S, "median, dawid_skene or exploit.", nullable=True),
        described("calibrated_tier", _I, "The grader's calibrated tier 1–3.", nullable=True),
        described("p_t1", _F, "P(T1) under the calibration.", nullable=True),
        described("p_t2", _F, "P(T2).", nullable=True),
        described("p_t3", _F, "P(T3).", nullable=True),
        described("calibration_held_out", _B, "Scored by a fold not fit on it.", nullable=True),
        # The latest resolved adjudication of a disagreement flag on this attempt, if any.
        described("adjudication", _S, "The latest adjudication's outcome.", nullable=True),
        described("adjudicated_tier", _I, "The adjudicated tier 1–3.", nullable=True),
        described("adjudicated_exploit", _B, "Adjudicated as an exploit.", nullable=True),
        described(
            "claim_marks",
            pa.list_(CLAIM_MARK),
            "Reviewers' marks on the grader's code claims about this attempt (after the "
            "reveal), for this row's configuration (every configuration's without one).",
        ),
        described("provenance", PROVENANCE, "Where the calibrated values came from."),
        described(
            "synthetic",
            _B,
            "Made by `manage.py demo --study` (synthetic groups, reviewers and graders), not "
            "measured; the manifest's `synthetic` entry counts such groups.",
        ),
    ]
)
LABEL_COLUMNS = tuple(LABEL_SCHEMA.names)
LABEL_TABLES = (
    Table("labels", LABEL_SCHEMA, "One row per attempt and grader configuration.", True),
)


def tier_fields(tier: str) -> tuple[int | None, bool]:
    """A stored label tier ('t1'…'t3', 'exploit' or '') as (tier 1–3 or null, exploit)."""
    return {"t1": 1, "t2": 2, "t3": 3}.get(tier), tier == "exploit"


def prefilled_criteria(label: dict[str, Any]) -> list[str]:
    """The criteria of a label (a `.values()` row) still holding the tier's pre-filled score, in
    rubric order; a pre-filled criterion whose score was cleared is not pre-filled."""
    left = set(label["prefilled"] or ())
    return [c for c in CRITERIA if c in left and label[c] is not None]


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
        "group__external_id",
        "group__step__run__name",
        "group__step__number",
        "group__task__external_id",
        f"group__step__run__metadata__{SYNTHETIC_KEY}",
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


def _humans(
    ids: list[int], filters: Filters
) -> tuple[dict[int, list[dict[str, Any]]], dict[int, list[dict[str, Any]]]]:
    """Per attempt: the first reviews' labels, and the sentinels' labels."""
    sentinel_rows: set[int] = set()

    def fetch(wanted: set[int]) -> Iterator[tuple[int, int, dict[str, Any]]]:
        q = Q(
            candidate__attempt_id__in=wanted,
            candidate__assignment__status=Assignment.Status.SUBMITTED,
        )
        if filters.campaign is not None:
            q &= Q(candidate__assignment__campaign_id=filters.campaign)
        for lab in (
            Label.objects.filter(q)
            .exclude(tier="")
            .order_by("candidate__assignment__reviewer_id", "pk")
            .values(
                "candidate__attempt_id",
                "candidate__assignment_id",
                "candidate__assignment__reviewer_id",
                "tier",
                "rank_in_tier",
                "candidate__assignment__sentinel",
                "prefilled",
                *CRITERIA,
            )
        ):
            if lab["candidate__assignment__sentinel"]:
                sentinel_rows.add(lab["candidate__assignment_id"])
            tier, exploit = tier_fields(lab["tier"])
            yield (
                lab["candidate__attempt_id"],
                lab["candidate__assignment_id"],
                {
                    "reviewer": reviewer_pseudonym(lab["candidate__assignment__reviewer_id"]),
                    "tier": tier,
                    "exploit": exploit,
                    "rank_in_tier": lab["rank_in_tier"],
                    "rubric": {c: lab[c] for c in CRITERIA},
                    "rubric_prefilled": prefilled_criteria(lab),
                    "_assignment": lab["candidate__assignment_id"],
                },
            )

    # A label of a patch is a label of every attempt that submitted it.
    firsts: dict[int, list[dict[str, Any]]] = {}
    repeats: dict[int, list[dict[str, Any]]] = {}
    for attempt_id, rows in fan_out(attempt_ids=ids, fetch=fetch).items():
        for row in rows:
            out = repeats if row["_assignment"] in sentinel_rows else firsts
            out.setdefault(attempt_id, []).append(
                {k: v for k, v in row.items() if k != "_assignment"}
            )
    return firsts, repeats


def _claim_marks(ids: list[int], filters: Filters) -> dict[int, list[dict[str, Any]]]:
    def fetch(wanted: set[int]) -> Iterator[tuple[int, int, dict[str, Any]]]:
        q = Q(
            candidate__attempt_id__in=wanted,
            candidate__assignment__status=Assignment.Status.SUBMITTED,
        )
        if filters.campaign is not None:
            q &= Q(candidate__assignment__campaign_id=filters.campaign)
        for pk, attempt_id, reviewer, config_id, config, run_id, ev, criterion, mark in (
            ClaimMark.objects.filter(q)
            .order_by("candidate__assignment__reviewer_id", "grader_run_id", "claim_key")
            .values_list(
                "pk",
                "candidate__attempt_id",
                "candidate__assignment__reviewer_id",
                "grader_run__config_id",
                "grader_run__config__name",
                "grader_run_id",
                "evidence_id",
                "criterion",
                "mark",
            )
        ):
            # Keyed by mark: each mark is its own row (fan_out keeps one row per key).
            yield (
                attempt_id,
                pk,
                {
                    "reviewer": reviewer_pseudonym(reviewer),
                    "grader_config": config,
                    "grader_run_id": str(run_id),
                    "evidence_id": ev,
                    "criterion": criterion,
                    "mark": mark,
                    "_config_id": config_id,
                },
            )

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
    batch: list[dict[str, Any]],
    fits: list[CalibrationFit | None],
    filters: Filters,
    source: ConsensusSource,
) -> list[dict[str, Any]]:
    ids = [a["id"] for a in batch]
    humans, sentinels = _humans(ids, filters)
    adjudicated = _adjudications(ids, filters)
    claim_marks = _claim_marks(ids, filters)
    cons = source.of(ids)
    cal: dict[tuple[int, int], CalibratedLabel] = {
        (c.fit_id, c.attempt_id): c
        for c in CalibratedLabel.objects.filter(
            attempt_id__in=ids, fit__in=[f for f in fits if f]
        ).annotate(run_fit_version=F("grader_run__fit_version"))
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
            adj_tier = tier_fields(adj.adjudicated_tier) if adj else (None, None)
            rows.append(
                {
                    **_keys(a),
                    "status": a["status"],
                    "test_reward": a["test_reward"],
                    "grader_config": fit.config.name if fit else None,
                    "grader_run_id": str(cl.grader_run_id) if cl else None,
                    "grader_tier": g.tier if g else None,
                    "grader_exploit_suspected": g.exploit_suspected if g else None,
                    "grader_rank_in_tier": g.rank_in_tier if g else None,
                    "grader_weighted_score": cl.weighted_score if cl else None,
                    "human_tiers": humans.get(a["id"], []),
                    "sentinel_tiers": sentinels.get(a["id"], []),
                    "n_reviews": c.n_reviews if c else 0,
                    "consensus_tier": c.tier if c else None,
                    "consensus_exploit": c.method == ConsensusLabel.Method.EXPLOIT if c else None,
                    "consensus_method": c.method if c else None,
                    "calibrated_tier": cl.tier if cl else None,
                    "p_t1": cl.p_t1 if cl else None,
                    "p_t2": cl.p_t2 if cl else None,
                    "p_t3": cl.p_t3 if cl else None,
                    "calibration_held_out": cl.held_out if cl else None,
                    "adjudication": adj.resolution if adj else None,
                    "adjudicated_tier": adj_tier[0],
                    "adjudicated_exploit": adj_tier[1] if adj and adj.adjudicated_tier else None,
                    "claim_marks": [
                        {k: v for k, v in m.items() if k != "_config_id"}
                        for m in claim_marks.get(a["id"], [])
                        if fit is None or m["_config_id"] == fit.config_id
                    ],
                    "provenance": {
                        "grader_run": str(cl.grader_run_id) if cl else None,
                        "calibration_computed_at": fit.computed_at.isoformat() if fit else None,
                        "consensus": c.method if c else None,
                        "grader_fit_version": _fit_version(cl),
                    },
                    "synthetic": a[f"group__step__run__metadata__{SYNTHETIC_KEY}"] is True,
                }
            )
    return rows


def _keys(a: dict[str, Any]) -> dict[str, Any]:
    run, step, task = (
        a["group__step__run__name"],
        a["group__step__number"],
        a["group__task__external_id"],
    )
    return {
        "run": run,
        "step": step,
        "task_id": task,
        "group_id": group_key(
            external_id=a["group__external_id"], run=run, step=step, task_id=task
        ),
        "group_db_id": a["group_id"],
        "attempt_id": a["external_id"],
        "attempt_db_id": a["id"],
        "attempt_index": a["index"],
    }


def _grades_for(run_ids: set[int], attempt_ids: list[int]) -> Any:
    from grading.models import CandidateGrade

    return CandidateGrade.objects.filter(run_id__in=run_ids, attempt_id__in=attempt_ids).only(
        "run_id", "attempt_id", "tier", "rank_in_tier", "exploit_suspected"
    )


def _fit_version(cl: CalibratedLabel | None) -> str | None:
    """The fit version of the calibrated run (annotated on the query: no extra one)."""
    return (getattr(cl, "run_fit_version", "") or None) if cl else None


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
    source = consensus_source(campaign=filters.campaign)
    return qs.count(), _rows(batch, _fits(config), filters, source)


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
    source = consensus_source(campaign=filters.campaign)
    out_dir.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    (table,) = LABEL_TABLES
    writer = TableWriter(out_dir / table.file(fmt), fmt, LABEL_SCHEMA)
    counts = {"rows": 0, "attempts": 0, "reviewed_attempts": 0, "calibrated_rows": 0}
    ok = False
    try:
        for attempts in attempt_batches(filters, batch):
            rows = _rows(attempts, fits, filters, source)
            writer.write(rows)
            counts["attempts"] += len(attempts)
            counts["reviewed_attempts"] += len({r["attempt_db_id"] for r in rows if r["n_reviews"]})
            counts["calibrated_rows"] += sum(r["calibrated_tier"] is not None for r in rows)
            if on_attempts:
                on_attempts(len(attempts))
        ok = True
    finally:
        writer.close(keep=ok)
    counts["rows"] = writer.rows
    files = {"labels": writer.path.name}
    contract = write_contract(
        out_dir=out_dir,
        fmt=fmt,
        version=SCHEMA_VERSION,
        tables=LABEL_TABLES,
        pretty_name="GAGAR calibrated tier labels",
        about="Human tier labels under pseudonymous reviewer ids, their consensus, and each "
        "grader configuration's calibrated tier, per attempt.",
    )
    manifest = {
        "schema": SCHEMA_VERSION,
        "kind": "calibrated_labels",
        "created_at": timezone.now().isoformat(),
        "format": fmt,
        "filters": {**filters.as_json(), "config": config.name if config else None},
        "counts": counts,
        "files": files,
        "contract": contract,
        "columns": list(LABEL_COLUMNS),
        "synthetic": synthetic_manifest(scope=filters.group_q()),
        "consensus": f"{CONSENSUS_RULE} {CAMPAIGN_SCOPE} With a campaign filter, human_tiers "
        "and n_reviews are that campaign's too; the calibrated tiers are fitted on every "
        "campaign's consensus.",
        "reviewers": "pseudonymous ids (HMAC of the account id with this installation's key)",
        "sentinels": "sentinel_tiers holds labels from self-consistency sentinels (a reviewer's "
        "second blind review of a group they had submitted); human_tiers, n_reviews and the "
        "consensus use each reviewer's first review only.",
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
        # Every configuration that graded the exported groups, per fit version: the fit (id,
        # held-out figures) and whether the configuration is approved for training.
        "graders": graders_of_groups(groups=filters.group_q(), config=config),
    }
    (out_dir / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
    result = ExportResult(directory=out_dir, files=files, counts=counts, manifest=manifest)
    return export_logged("labels", fmt, started, result)
