"""The training loop's two calls: submit groups for grading, and fetch their advantages.

Submission reuses the bundle import (natural ids and the content hash make a retry a no-op) and
`grader_runs_request` (idempotent per group × configuration × replica); an `Idempotency-Key`
additionally replays the first response byte for byte. Fetching waits for grading up to a
deadline by polling one cheap query, then refreshes the stored advantages and reads them.
"""

from __future__ import annotations

import hashlib
import io
import logging
import time
from dataclasses import dataclass
from typing import Any, Literal

from django.db import IntegrityError, transaction

from grading.models import GraderConfig, GraderRun, Group, IdempotencyKey
from grading.selectors_training import (
    SCHEMA_VERSION,
    advantages_for_groups,
    attempt_rows,
    grading_states,
    group_row,
)
from grading.services.advantages import AdvantageParams, group_advantages_refresh
from grading.services.grader_runs import grader_runs_request
from grading.services.imports import ImportFailedError, ImportReport, groups_import
from grading.services.sources import bundle_records

ResponseStatus = Literal["graded", "pending", "fallback", "failed"]
logger = logging.getLogger("gagar.training")
MAX_DEADLINE_S = 600.0
# Polling starts fast (a heuristic grade takes well under a second) and backs off to 1 s.
_POLL_FIRST_S = 0.05
_POLL_MAX_S = 1.0


@dataclass
class Submission:
    report: ImportReport | None
    runs: list[GraderRun]
    error: ImportFailedError | None = None


def groups_submit(*, body: bytes, config: GraderConfig, partial: bool = False) -> Submission:
    """Import a bundle (one group or a whole step) and request grading of every group in it."""
    started = time.monotonic()
    _, records = bundle_records(stream=io.BytesIO(body), source="request", base_dir=None)
    try:
        report = groups_import(records=records, partial=partial)
    except ImportFailedError as exc:
        logger.info(
            "submit refused",
            extra={
                "event": "submit.refused",
                "bytes": len(body),
                "problems": len(exc.report.problems),
                "duration_ms": round((time.monotonic() - started) * 1000),
            },
        )
        return Submission(report=None, runs=[], error=exc)
    groups = list(Group.objects.filter(pk__in=[r.group_id for r in report.results]))
    runs = grader_runs_request(groups=groups, config=config) if groups else []
    logger.info(
        "submit accepted",
        extra={
            "event": "submit.accepted",
            "bytes": len(body),
            "groups": len(groups),
            "grader_runs": len(runs),
            "grader_config": config.name,
            "problems": len(report.problems),
            "duration_ms": round((time.monotonic() - started) * 1000),
        },
    )
    return Submission(report=report, runs=list(runs))


def idempotent_response_find(*, user_id: int, key: str, request_hash: str) -> IdempotencyKey | None:
    """The stored response for this key, or None. Raises ValueError if the body differs."""
    found = IdempotencyKey.objects.filter(user_id=user_id, key=key).first()
    if found is not None and found.request_hash != request_hash:
        raise ValueError("this Idempotency-Key was used with a different request")
    return found


def idempotent_response_store(
    *,
    user_id: int,
    key: str,
    request_hash: str,
    status_code: int,
    response: dict[str, Any],
) -> None:
    try:
        with transaction.atomic():
            IdempotencyKey.objects.create(
                user_id=user_id,
                key=key,
                request_hash=request_hash,
                status_code=status_code,
                response=response,
            )
    except IntegrityError:
        # A concurrent retry stored it first; the import was a no-op for it anyway.
        pass


def request_hash(*parts: bytes) -> str:
    digest = hashlib.sha256()
    for part in parts:
        digest.update(len(part).to_bytes(8, "big"))
        digest.update(part)
    return digest.hexdigest()


@dataclass
class Fetched:
    groups: list[dict[str, Any]]
    waited_s: float

    def counts(self) -> dict[str, int]:
        out = {"graded": 0, "pending": 0, "fallback": 0, "failed": 0}
        for g in self.groups:
            out[g["status"]] += 1
        return out

    @property
    def complete(self) -> bool:
        return all(g["status"] != "pending" for g in self.groups)


def grading_wait(*, group_ids: list[int], config: GraderConfig, deadline_s: float) -> float:
    """Sleep until no group of these is pending, or the deadline; returns seconds waited."""
    start = time.monotonic()
    interval = _POLL_FIRST_S
    while True:
        states = grading_states(group_ids=group_ids, config=config)
        if all(s.status != "pending" for s in states.values()):
            break
        remaining = deadline_s - (time.monotonic() - start)
        if remaining <= 0:
            break
        time.sleep(min(interval, remaining))
        interval = min(interval * 1.5, _POLL_MAX_S)
    return time.monotonic() - start


def advantages_fetch(
    *,
    group_ids: list[int],
    config: GraderConfig,
    params: AdvantageParams,
    deadline_s: float | None,
) -> Fetched:
    """Advantages of these groups, in `gagar.v2` rows, with a status per group.

    Without a deadline a group still being graded is `pending` (no advantages). With one, the
    call waits up to `deadline_s` and then returns such groups as `fallback` (reason `deadline`)
    with plain GRPO advantages, so a synchronous trainer never stalls.
    """
    waited = 0.0
    if deadline_s is not None and deadline_s > 0:
        waited = grading_wait(
            group_ids=group_ids, config=config, deadline_s=min(deadline_s, MAX_DEADLINE_S)
        )
    group_advantages_refresh(group_ids=group_ids, config=config, params=params)
    out = []
    for ga in advantages_for_groups(group_ids=group_ids, config=config, params_hash=params.key):
        head = group_row(ga)
        status: ResponseStatus
        if not ga.fallback:
            status = "graded"
        elif ga.fallback_reason == "pending":
            if deadline_s is None:
                status = "pending"
            else:
                status = "fallback"
                head["fallback_reason"] = "deadline"
        elif ga.fallback_reason in ("failed", "invalid_verdict"):
            status = "failed"
        else:
            status = "fallback"
        rows = None if status == "pending" else attempt_rows(ga, head)
        out.append({**head, "status": status, "attempts": rows})
    fetched = Fetched(groups=out, waited_s=waited)
    counts = fetched.counts()
    if counts.get("fallback") or counts.get("failed"):
        # A trainer got plain GRPO for these groups: worth a line, with why.
        reasons: dict[str, int] = {}
        for g in out:
            if g["status"] in ("fallback", "failed"):
                reasons[g["fallback_reason"]] = reasons.get(g["fallback_reason"], 0) + 1
        logger.info(
            "advantages fell back",
            extra={
                "event": "grading.fallback",
                "grader_config": config.name,
                "groups": len(out),
                "counts": counts,
                "reasons": reasons,
                "waited_s": round(waited, 3),
            },
        )
    return fetched


def fetched_payload(
    *, fetched: Fetched, config: GraderConfig, params: AdvantageParams, scope: dict[str, Any]
) -> dict[str, Any]:
    return {
        "schema": SCHEMA_VERSION,
        **scope,
        "grader_config": config.name,
        "params": params.as_json(),
        "complete": fetched.complete,
        "counts": fetched.counts(),
        "waited_seconds": round(fetched.waited_s, 3),
        "groups": fetched.groups,
    }
