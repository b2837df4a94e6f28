"""The anonymized, publishable data package (SPEC §1, §7): one row per attempt with its task,
repository reference, trajectory, diff, tests, verdicts and reviews, loadable with Hugging Face
`datasets` (`load_dataset("json" | "parquet" | "csv", data_files=...)`).

Anonymized: no agent, model or system names (attempt metadata is left out and the group's agent
names and the run name are redacted from diffs, trajectories and test output, as reviewers see
them), runs, groups and attempts under keyed hashes, reviewers under pseudonyms. Nested data
(trajectory events, test report, verdicts, reviews) is JSON text so every row has one schema.
Streamed: attempts in batches by primary key, trajectories read per batch.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from collections import defaultdict
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
from django.conf import settings
from django.utils import timezone

from grading.domain.compression import decompress
from grading.domain.redaction import Redactor, build_redactor, identity_values
from grading.models import Attempt, CandidateGrade, GraderRun, TrajectoryChunk
from grading.services.exports import FORMATS, ExportResult, Format
from grading.services.exports import _Writer as TableWriter
from review.analytics.exports import attempt_batches, reviewer_pseudonym
from review.analytics.filters import Filters
from review.analytics.sharing import fan_out
from review.models import Assignment, Campaign, ConsensusLabel, Disagreement, FixRequest, Label
from review.models.labels import CRITERIA

SCHEMA_VERSION = "gagar.package.v1"
BATCH = 200
TEST_OUTPUT_MAX = 64 * 1024
_S, _I, _F = pa.string(), pa.int64(), pa.float64()
PACKAGE_SCHEMA = pa.schema(
    [
        ("task_id", _S),
        ("repo", _S),
        ("base_commit", _S),
        ("problem_statement", _S),
        ("fail_to_pass", pa.list_(_S)),
        ("pass_to_pass", pa.list_(_S)),
        ("test_command", _S),
        ("run_key", _S),
        ("step", _I),
        ("group_key", _S),
        ("attempt_key", _S),
        ("attempt_index", _I),
        ("status", _S),
        ("test_reward", _F),
        ("test_report", _S),
        ("test_output", _S),
        ("patch", _S),
        ("trajectory_format", _S),
        ("trajectory", _S),
        ("num_turns", _I),
        ("tokens_in", _I),
        ("tokens_out", _I),
        ("verdicts", _S),
        ("reviews", _S),
        ("consensus_tier", _I),
    ]
)
COLUMNS = tuple(PACKAGE_SCHEMA.names)


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
    patterns = getattr(settings, "GAGAR_REVIEW_FINGERPRINTS", [])
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
                "tier": g.tier,
                "rank_in_tier": g.rank_in_tier,
                "weighted_score": g.weighted_score,
                "scores": g.scores,
                "severe_issues": g.severe_issues,
                "exploit_suspected": g.exploit_suspected,
                "summary": g.summary,
            }
        )
    return out


def _reviews(ids: list[int]) -> dict[int, list[dict[str, Any]]]:
    done = {"candidate__assignment__status": Assignment.Status.SUBMITTED}

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
                    "tier": lab["tier"],
                    "rank_in_tier": lab["rank_in_tier"],
                    "rubric": {c: lab[c] for c in CRITERIA},
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
        "test_report": json.dumps(redact.redact_obj(a.test_report)),
        "test_output": _test_output(a, redact),
        "patch": redact(a.patch.text) if a.patch else "",
        "trajectory_format": traj.format if traj else None,
        "trajectory": json.dumps(redact.redact_obj(extra["events"])) if traj else None,
        "num_turns": a.num_turns,
        "tokens_in": a.tokens_in,
        "tokens_out": a.tokens_out,
        "verdicts": json.dumps(redact.redact_obj(extra["verdicts"])),
        "reviews": json.dumps(extra["reviews"]),
        "consensus_tier": extra["consensus"],
    }


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
    out_dir.mkdir(parents=True, exist_ok=True)
    writer = TableWriter(out_dir / f"attempts.{fmt}", fmt, COLUMNS, schema=PACKAGE_SCHEMA)
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
            events, verdicts, reviews = _trajectories(ids), _verdicts(ids), _reviews(ids)
            consensus = dict(
                ConsensusLabel.objects.filter(attempt_id__in=ids).values_list("attempt_id", "tier")
            )
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
    manifest = {
        "schema": SCHEMA_VERSION,
        "kind": "data_package",
        "created_at": timezone.now().isoformat(),
        "format": fmt,
        "filters": filters.as_json(),
        "counts": counts,
        "files": files,
        "columns": list(COLUMNS),
        "json_columns": ["test_report", "trajectory", "verdicts", "reviews"],
        "anonymization": "agent/model/system names removed and redacted from text; run, group "
        "and attempt ids replaced by keyed hashes; reviewers pseudonymous",
        "load_with": f'datasets.load_dataset("{"json" if fmt == "jsonl" else fmt}", '
        f'data_files="{writer.path.name}")',
    }
    (out_dir / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
    return ExportResult(directory=out_dir, files=files, counts=counts, manifest=manifest)
