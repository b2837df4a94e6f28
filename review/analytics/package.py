"""The anonymized, publishable data package (method §1 and §7): one row per attempt with its task,
repository reference, trajectory, diff, tests, verdicts and reviews: a Hugging Face dataset
(`datasets.load_dataset(folder)`, its features declared in the folder's dataset card).

Anonymized: no agent, model or system names (attempt metadata is left out and the group's agent
names and the run name are redacted from diffs, trajectories and test output, as reviewers see
them), runs, groups and attempts under keyed hashes, reviewers under pseudonyms. Nested data
(trajectory events, test report, verdicts, reviews) is typed structs and lists (`gagar.package.v2`;
only the free-form leftovers of a report or an event are JSON text).
Streamed: attempts in batches by primary key, trajectories read per batch.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, cast

import pyarrow as pa
from django.conf import settings
from django.utils import timezone

from grading.domain.compression import decompress
from grading.domain.contracts import described, struct
from grading.domain.redaction import Redactor, build_redactor, identity_values
from grading.models import Attempt, CandidateGrade, GraderRun, TrajectoryChunk
from grading.selectors.gate import graders_of_groups
from grading.selectors.synthetic import synthetic_manifest
from grading.services.exports import (
    FORMATS,
    ExportResult,
    Format,
    Table,
    TableWriter,
    export_logged,
    write_contract,
)
from review.analytics.consensus import CAMPAIGN_SCOPE, CONSENSUS_RULE, consensus_source
from review.analytics.exports import (
    attempt_batches,
    prefilled_criteria,
    reviewer_pseudonym,
    tier_fields,
)
from review.analytics.filters import Filters
from review.analytics.label_refresh import labels_refresh, labels_stale
from review.analytics.sharing import fan_out
from review.models import Assignment, Campaign, ConsensusLabel, Disagreement, FixRequest, Label
from review.models.reviewing import CRITERIA

SCHEMA_VERSION = "gagar.package.v2"
BATCH = 200
TEST_OUTPUT_MAX = 64 * 1024
_S, _I, _F, _B = pa.string(), pa.int64(), pa.float64(), pa.bool_()
_NAMES = pa.list_(_S)
_OUTCOME = struct(
    described("success", _NAMES, "Tests that passed."),
    described("failure", _NAMES, "Tests that failed."),
)
TEST_BUCKETS = ("FAIL_TO_PASS", "PASS_TO_PASS", "FAIL_TO_FAIL", "PASS_TO_FAIL")
TEST_REPORT = struct(
    described("resolved", _B, "The harness's verdict.", nullable=True),
    described(
        "tests_status",
        struct(*(described(b, _OUTCOME, nullable=True) for b in TEST_BUCKETS)),
        "SWE-bench's per-test outcome, by bucket.",
        nullable=True,
    ),
    described("other", _S, "Any other keys of the report, as JSON text.", nullable=True),
)
EVENT = struct(
    described("kind", _S, "message, action, observation, …"),
    described("role", _S, "Who wrote it; null for the harness.", nullable=True),
    described("text", _S, "A self-contained rendering."),
    described("tool", _S, nullable=True),
    described("args", _S, nullable=True),
    # Small format-specific leftovers of any shape: the one free-form field, as JSON text.
    described("extra", _S, "Leftovers of the source format, as JSON text.", nullable=True),
)
SCORE = struct(
    described("criterion", _S),
    described("score", _I, nullable=True),
    described("rationale", _S, nullable=True),
    described("evidence", _NAMES, nullable=True),
)
SEVERE_ISSUE = struct(
    described("category", _S),
    described("description", _S, nullable=True),
    described("evidence", _NAMES, nullable=True),
)
VERDICT = struct(
    described("grader_config", _S),
    described("prompt_version", _S),
    described("temperature", _F, nullable=True),
    described("replica", _I),
    described(
        "fit_version",
        _S,
        "The analysis fit the run graded with (manifest `graders`: its held-out figures and "
        "approval); null for backends without a fit.",
        nullable=True,
    ),
    described("tier", _I, "1–3.", nullable=True),
    described("exploit_suspected", _B),
    described("rank_in_tier", _I, nullable=True),
    described("weighted_score", _F, nullable=True),
    described("scores", pa.list_(SCORE)),
    described("severe_issues", pa.list_(SEVERE_ISSUE)),
    described("summary", _S),
)
FIX_REQUEST = struct(
    described("path", _S),
    described("line", _I),
    described("side", _S),
    described("severity", _S),
    described("criterion", _S),
    described("text", _S),
    described("active_ms_before", _I),
)
DISAGREEMENT = struct(
    described("status", _S),
    described("resolution", _S),
    described("adjudicated_tier", _I, nullable=True),
    described("adjudicated_exploit", _B),
)
REVIEW = struct(
    described("reviewer", _S, "Pseudonymous reviewer id."),
    described("imported", _B, "Imported from elsewhere (no time, no fix requests)."),
    described("tier", _I, "1–3; null for an exploit label.", nullable=True),
    described("exploit", _B, "Labelled exploit / test tampering."),
    described("rank_in_tier", _I, nullable=True),
    described("rubric", struct(*(described(c, _I, nullable=True) for c in CRITERIA))),
    described(
        "rubric_prefilled",
        pa.list_(_S),
        "Criteria whose score was left as the tier pre-filled it (never set or confirmed).",
    ),
    described("mergeability", _S),
    described("confidence", _I, nullable=True),
    described("active_ms", _I, "null for imported reviews.", nullable=True),
    described("fix_requests", pa.list_(FIX_REQUEST), "null for imported reviews.", nullable=True),
    described("disagreements", pa.list_(DISAGREEMENT)),
)
PACKAGE_SCHEMA = pa.schema(
    [
        described("task_id", _S, "The task's external id (e.g. the SWE-bench instance id)."),
        described("repo", _S, "The repository (owner/name)."),
        described("base_commit", _S),
        described("problem_statement", _S),
        described("fail_to_pass", _NAMES),
        described("pass_to_pass", _NAMES),
        described("test_command", _S),
        described("run_key", _S, "The run, as a keyed hash."),
        described("step", _I),
        described("group_key", _S, "The group, as a keyed hash."),
        described("attempt_key", _S, "The attempt, as a keyed hash."),
        described("attempt_index", _I),
        described("status", _S, "valid, infra_failed or exploit_confirmed."),
        described("test_reward", _F),
        described("test_report", TEST_REPORT, "The evaluation report, redacted."),
        described("test_output", _S, "Test output, redacted, at most 64 KiB."),
        described("patch", _S, "The unified diff, redacted."),
        described("trajectory_format", _S, nullable=True),
        described(
            "trajectory", pa.list_(EVENT), "Events, redacted; null without one.", nullable=True
        ),
        described("num_turns", _I, nullable=True),
        described("tokens_in", _I, nullable=True),
        described("tokens_out", _I, nullable=True),
        described("verdicts", pa.list_(VERDICT), "Succeeded grader runs' grades."),
        described("reviews", pa.list_(REVIEW), "Submitted human reviews."),
        described("consensus_tier", _I, "Human consensus tier 1–3.", nullable=True),
        described("consensus_exploit", _B, "The consensus is 'exploit'.", nullable=True),
    ]
)
COLUMNS = tuple(PACKAGE_SCHEMA.names)
PACKAGE_TABLES = (Table("attempts", PACKAGE_SCHEMA, "One row per attempt.", default=True),)


def _names(value: Any) -> list[str] | None:
    return [str(v) for v in value] if isinstance(value, list) else None


def report_as_struct(report: Any) -> dict[str, Any]:
    """A report of any shape as the typed struct: `resolved`, `tests_status` by bucket, and
    whatever else it held as JSON text (nothing is dropped)."""
    report = dict(report) if isinstance(report, dict) else {"value": report}
    resolved = report.pop("resolved", None)
    status = report.pop("tests_status", None)
    buckets: dict[str, Any] | None = None
    if isinstance(status, dict):
        buckets = {}
        for b in TEST_BUCKETS:
            v = status.pop(b, None)
            buckets[b] = (
                {
                    "success": _names(v.get("success")) or [],
                    "failure": _names(v.get("failure")) or [],
                }
                if isinstance(v, dict)
                else None
            )
        if status:
            report["tests_status"] = status  # buckets of another name stay as text
    elif status is not None:
        report["tests_status"] = status
    return {
        "resolved": resolved if isinstance(resolved, bool) else None,
        "tests_status": buckets,
        "other": json.dumps(report, sort_keys=True) if report else None,
    }


def _event(e: dict[str, Any]) -> dict[str, Any]:
    extra = e.get("extra")
    return {
        "kind": str(e.get("kind", "")),
        "role": e.get("role"),
        "text": str(e.get("text", "")),
        "tool": e.get("tool"),
        "args": e.get("args"),
        "extra": json.dumps(extra, sort_keys=True) if extra else None,
    }


def _verdict_scores(scores: Any) -> list[dict[str, Any]]:
    out = []
    for criterion, value in (scores or {}).items():
        v = value if isinstance(value, dict) else {"score": value}
        score = v.get("score")
        out.append(
            {
                "criterion": str(criterion),
                "score": int(score) if isinstance(score, int | float) else None,
                "rationale": v.get("rationale"),
                "evidence": _names(v.get("evidence")),
            }
        )
    return out


def _severe(issues: Any) -> list[dict[str, Any]]:
    out = []
    for item in issues or []:
        i = item if isinstance(item, dict) else {"category": "other", "description": str(item)}
        out.append(
            {
                "category": str(i.get("category", "other")),
                "description": i.get("description"),
                "evidence": _names(i.get("evidence")),
            }
        )
    return out


def _key(kind: str, value: object) -> str:
    digest = hmac.new(settings.SECRET_KEY.encode(), f"{kind}:{value}".encode(), hashlib.sha256)
    return f"{kind[0]}_{digest.hexdigest()[:16]}"


def _redactors(rows: list[Attempt]) -> dict[int, Redactor]:
    # The same names the review pages redact (grading.selectors.group_identity_names), read
    # from the batch already in memory instead of one query per group.
    names: dict[int, list[str]] = defaultdict(list)
    for a in rows:
        names[a.group_id] += identity_values(
            a.agent_system, a.agent_model, a.agent_family, a.agent_metadata
        )
        names[a.group_id].append(a.group.step.run.name)
    patterns = settings.GAGAR_REVIEW_FINGERPRINTS
    return {gid: build_redactor(n, patterns) for gid, n in names.items()}


def _trajectories(ids: list[int]) -> dict[int, list[Any]]:
    events: dict[int, list[Any]] = defaultdict(list)
    chunks = (
        TrajectoryChunk.objects.filter(trajectory__attempt_id__in=ids)
        .order_by("trajectory_id", "seq")
        .values_list("trajectory__attempt_id", "data")
    )
    for attempt_id, data in chunks.iterator(chunk_size=50):
        for line in decompress(bytes(data)).splitlines():
            if line.strip():
                events[attempt_id].append(json.loads(line))
    return events


def _verdicts(ids: list[int]) -> dict[int, list[dict[str, Any]]]:
    out: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for g in (
        CandidateGrade.objects.filter(attempt_id__in=ids, run__status=GraderRun.Status.SUCCEEDED)
        .select_related("run__config")
        .order_by("run__config__name", "run__replica")
    ):
        out[g.attempt_id].append(
            {
                "grader_config": g.run.config.name,
                # The prompt the run really used (older runs: their configuration's).
                "prompt_version": g.run.prompt_version or g.run.config.prompt_version,
                "temperature": g.run.config.temperature,
                "replica": g.run.replica,
                "fit_version": g.run.fit_version or None,
                "tier": g.tier,
                "exploit_suspected": g.exploit_suspected,
                "rank_in_tier": g.rank_in_tier,
                "weighted_score": g.weighted_score,
                "scores": _verdict_scores(g.scores),
                "severe_issues": _severe(g.severe_issues),
                "summary": g.summary,
            }
        )
    return out


def _reviews(ids: list[int], campaign: int | None) -> dict[int, list[dict[str, Any]]]:
    # Each reviewer's first review (a sentinel repeat is not another review of the candidate);
    # a package of one campaign publishes that campaign's reviews only.
    done: dict[str, Any] = {
        "candidate__assignment__status": Assignment.Status.SUBMITTED,
        "candidate__assignment__sentinel": False,
    }
    if campaign is not None:
        done["candidate__assignment__campaign_id"] = campaign

    def fetch(wanted: set[int]) -> Iterator[tuple[int, int, dict[str, Any]]]:
        fixes: dict[int, list[dict[str, Any]]] = defaultdict(list)
        for f in FixRequest.objects.filter(candidate__attempt_id__in=wanted, **done).values(
            "candidate_id",
            "path",
            "line",
            "side",
            "severity",
            "criterion",
            "text",
            "active_ms_before",
        ):
            row: dict[str, Any] = dict(f)
            fixes[row.pop("candidate_id")].append(row)
        # The reviewer's disagreement flags on this candidate and how they were adjudicated
        # (the free-text notes stay out, like the labels' own notes).
        flags: dict[int, list[dict[str, Any]]] = defaultdict(list)
        for d in Disagreement.objects.filter(candidate__attempt_id__in=wanted, **done).values(
            "candidate_id", "status", "resolution", "adjudicated_tier"
        ):
            flag: dict[str, Any] = dict(d)
            tier, exploit = tier_fields(flag["adjudicated_tier"])
            flag.update(adjudicated_tier=tier, adjudicated_exploit=exploit)
            flags[flag.pop("candidate_id")].append(flag)
        for lab in (
            Label.objects.filter(candidate__attempt_id__in=wanted, **done)
            .order_by("pk")
            .values(
                "candidate_id",
                "candidate__attempt_id",
                "candidate__assignment_id",
                "candidate__assignment__reviewer_id",
                "candidate__assignment__campaign__origin",
                "candidate__active_ms",
                "tier",
                "rank_in_tier",
                "mergeability",
                "confidence",
                "prefilled",
                *CRITERIA,
            )
        ):
            # Reviews imported from elsewhere recorded no time and no fix requests: null,
            # never zero or an empty list.
            imported = lab["candidate__assignment__campaign__origin"] == Campaign.Origin.IMPORTED
            yield (
                lab["candidate__attempt_id"],
                lab["candidate__assignment_id"],
                {
                    "reviewer": reviewer_pseudonym(lab["candidate__assignment__reviewer_id"]),
                    "imported": imported,
                    "tier": tier_fields(lab["tier"])[0],
                    "exploit": tier_fields(lab["tier"])[1],
                    "rank_in_tier": lab["rank_in_tier"],
                    "rubric": {c: lab[c] for c in CRITERIA},
                    "rubric_prefilled": prefilled_criteria(lab),
                    "mergeability": lab["mergeability"],
                    "confidence": lab["confidence"],
                    "active_ms": None if imported else lab["candidate__active_ms"],
                    "fix_requests": None if imported else fixes.get(lab["candidate_id"], []),
                    "disagreements": flags.get(lab["candidate_id"], []),
                },
            )

    # A review of a patch is a review of every attempt that submitted it.
    return fan_out(attempt_ids=ids, fetch=fetch)


def _test_output(a: Attempt, redact: Redactor) -> str:
    text = a.test_output().decode("utf-8", errors="replace")
    if len(text) > TEST_OUTPUT_MAX:
        half = TEST_OUTPUT_MAX // 2
        text = text[:half] + "\n[… truncated …]\n" + text[-half:]
    return redact(text)


def _row(a: Attempt, redact: Redactor, extra: dict[str, Any]) -> dict[str, Any]:
    task = a.group.task
    traj = getattr(a, "trajectory", None)
    return {
        "task_id": task.external_id,
        "repo": task.repo,
        "base_commit": task.base_commit,
        "problem_statement": task.problem_statement,
        "fail_to_pass": [str(t) for t in task.fail_to_pass or []],
        "pass_to_pass": [str(t) for t in task.pass_to_pass or []],
        "test_command": task.test_command,
        "run_key": _key("run", a.group.step.run_id),
        "step": a.group.step.number,
        "group_key": _key("group", a.group_id),
        "attempt_key": _key("attempt", a.pk),
        "attempt_index": a.index,
        "status": a.status,
        "test_reward": a.test_reward,
        "test_report": report_as_struct(redact.redact_obj(a.test_report)),
        "test_output": _test_output(a, redact),
        "patch": redact(a.patch.text) if a.patch else "",
        "trajectory_format": traj.format if traj else None,
        "trajectory": [_event(e) for e in cast(list[Any], redact.redact_obj(extra["events"]))]
        if traj
        else None,
        "num_turns": a.num_turns,
        "tokens_in": a.tokens_in,
        "tokens_out": a.tokens_out,
        "verdicts": redact.redact_obj(extra["verdicts"]),
        "reviews": extra["reviews"],
        "consensus_tier": extra["consensus"][0] if extra["consensus"] else None,
        "consensus_exploit": extra["consensus"][1] if extra["consensus"] else None,
    }


ANONYMIZATION = (
    "Agent, model and system names are left out and redacted from every text (diffs, "
    "trajectories, test output and reports, verdicts) as reviewers see them; run, group and "
    "attempt ids are keyed hashes (HMAC with the installation's secret); reviewers are "
    "pseudonyms (HMAC of the account id); review notes are left out."
)
CARD_ABOUT = (
    "One row per attempt of a coding agent at a task: the task, the agent's patch, its "
    "trajectory, the tests' report and output, the grader's verdicts and blind human reviews "
    "(tier 1–3 or an exploit flag, rubric scores, fix requests).\n\n"
    "**Licence.** Set by whoever publishes this package: the tasks and patches come from the "
    "repositories named in `repo` under their own licences; `other` until then.\n\n"
    "**How it was anonymised.** " + ANONYMIZATION
)


def package_export(
    *,
    fmt: Format,
    out_dir: Path,
    filters: Filters | None = None,
    batch: int = BATCH,
    on_attempts: Callable[[int], None] | None = None,
) -> ExportResult:
    if fmt not in FORMATS:
        raise ValueError(f"unknown format {fmt!r}; use one of {', '.join(FORMATS)}")
    filters = filters or Filters()
    if labels_stale():
        labels_refresh()  # the package carries the consensus tier, whoever asks for it
    # One campaign's package: its reviews and the consensus of those reviews only.
    source = consensus_source(campaign=filters.campaign)
    out_dir.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    (table,) = PACKAGE_TABLES
    writer = TableWriter(out_dir / table.file(fmt), fmt, PACKAGE_SCHEMA)
    tasks: set[str] = set()
    groups: set[int] = set()
    counts = {"attempts": 0, "reviewed_attempts": 0, "graded_attempts": 0}
    ok = False
    try:
        for ids_batch in attempt_batches(filters, batch):
            ids = [r["id"] for r in ids_batch]
            attempts = list(
                Attempt.objects.filter(pk__in=ids)
                .select_related("group__task", "group__step__run", "patch", "trajectory")
                .order_by("pk")
            )
            redactors = _redactors(attempts)
            events, verdicts = _trajectories(ids), _verdicts(ids)
            reviews = _reviews(ids, filters.campaign)
            consensus = {
                aid: (c.tier, c.method == ConsensusLabel.Method.EXPLOIT)
                for aid, c in source.of(ids).items()
            }
            rows = []
            for a in attempts:
                extra = {
                    "events": events.get(a.pk, []),
                    "verdicts": verdicts.get(a.pk, []),
                    "reviews": reviews.get(a.pk, []),
                    "consensus": consensus.get(a.pk),
                }
                rows.append(_row(a, redactors[a.group_id], extra))
                tasks.add(a.group.task.external_id)
                groups.add(a.group_id)
                counts["reviewed_attempts"] += bool(extra["reviews"])
                counts["graded_attempts"] += bool(extra["verdicts"])
            writer.write(rows)
            counts["attempts"] += len(rows)
            if on_attempts:
                on_attempts(len(rows))
        ok = True
    finally:
        writer.close(keep=ok)
    counts.update(tasks=len(tasks), groups=len(groups))
    files = {"attempts": writer.path.name}
    contract = write_contract(
        out_dir=out_dir,
        fmt=fmt,
        version=SCHEMA_VERSION,
        tables=PACKAGE_TABLES,
        pretty_name="GAGAR review data package",
        about=CARD_ABOUT,
    )
    manifest = {
        "schema": SCHEMA_VERSION,
        "kind": "data_package",
        "created_at": timezone.now().isoformat(),
        "format": fmt,
        "filters": filters.as_json(),
        "counts": counts,
        "files": files,
        "contract": contract,
        "columns": list(COLUMNS),
        "synthetic": synthetic_manifest(scope=filters.group_q()),
        "anonymization": ANONYMIZATION,
        "consensus": f"consensus_tier and consensus_exploit: {CONSENSUS_RULE} {CAMPAIGN_SCOPE} "
        "With a campaign filter, reviews are that campaign's too.",
        # Every configuration whose verdicts are in the package, per fit version: the fit (id,
        # held-out figures) and whether the configuration is approved for training.
        "graders": graders_of_groups(groups=filters.group_q()),
        "load_with": "datasets.load_dataset(<this folder>)",
    }
    (out_dir / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
    result = ExportResult(directory=out_dir, files=files, counts=counts, manifest=manifest)
    return export_logged("package", fmt, started, result)
