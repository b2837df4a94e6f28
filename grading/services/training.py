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
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Literal

from django.db import IntegrityError, transaction

from grading.domain.records import GroupRecord
from grading.models import GraderConfig, GraderRun, Group, IdempotencyKey, Run, RunGraderSwitch
from grading.selectors.gate import ApprovalState, grader_approval_state
from grading.selectors.training import (
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
    # Configurations that would grade these groups but are not approved for training, when
    # approval is required (GAGAR_REQUIRE_APPROVED_GRADER): nothing was imported.
    refused: list[ApprovalState] = field(default_factory=list)
    configs: dict[int, GraderConfig] = field(default_factory=dict)  # group pk -> its grader


def run_configs(
    *, run_names: Iterable[str], config: GraderConfig, explicit: bool
) -> dict[str, GraderConfig]:
    """The configuration that grades each run's groups: the one pinned to the run when it has
    one (a changed default never switches a run mid-way), unless another is named explicitly."""
    pinned = {
        r.name: r.grader_config
        for r in Run.objects.filter(name__in=list(run_names)).select_related("grader_config")
    }
    out = {}
    for name in run_names:
        current = pinned.get(name)
        out[name] = config if current is None or explicit else current
    return out


def _pin(runs: dict[str, GraderConfig], steps: dict[str, int], requested_by: str) -> None:
    """Pin unpinned runs; record an explicit switch of a pinned one."""
    with transaction.atomic():
        for run in Run.objects.select_for_update().filter(name__in=list(runs)):
            target = runs[run.name]
            if run.grader_config_id == target.pk:
                continue
            if run.grader_config_id is not None:
                RunGraderSwitch.objects.create(
                    run=run, from_config_id=run.grader_config_id, to_config=target,
                    at_step=steps.get(run.name), requested_by=requested_by[:150],
                )  # fmt: skip
            run.grader_config = target
            run.save(update_fields=["grader_config"])


def groups_submit(
    *,
    body: bytes,
    config: GraderConfig,
    partial: bool = False,
    explicit: bool = True,
    requested_by: str = "",
    require_approved: bool = False,
) -> Submission:
    """Import a bundle (one group or a whole step) and request grading of every group in it,
    each run's groups with its pinned configuration (`run_configs`). With `require_approved`,
    a configuration not approved for training refuses the whole submission before anything
    is written."""
    started = time.monotonic()
    _, stream = bundle_records(stream=io.BytesIO(body), source="request", base_dir=None)
    records = list(stream)
    run_names = sorted({r.run for r in records if isinstance(r, GroupRecord)})
    plan = run_configs(run_names=run_names, config=config, explicit=explicit)
    if require_approved:
        states = {c.pk: grader_approval_state(config=c) for c in [config, *plan.values()]}
        refused = [s for s in states.values() if not s.approved]
        if refused:
            return Submission(report=None, runs=[], refused=refused)
    try:
        report = groups_import(records=iter(records), partial=partial)
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
    steps = {r.run: r.step for r in report.results}
    _pin({n: c for n, c in plan.items() if n in steps}, steps, requested_by)
    groups = list(
        Group.objects.filter(pk__in=[r.group_id for r in report.results]).select_related(
            "step__run"
        )
    )
    runs: list[GraderRun] = []
    configs: dict[int, GraderConfig] = {}
    for cfg in {c.pk: c for c in plan.values()}.values():
        mine = [g for g in groups if plan[g.step.run.name].pk == cfg.pk]
        runs += grader_runs_request(groups=mine, config=cfg) if mine else []
        configs.update({g.pk: cfg for g in mine})
    logger.info(
        "submit accepted",
        extra={
            "event": "submit.accepted",
            "bytes": len(body),
            "groups": len(groups),
            "grader_runs": len(runs),
            "grader_config": ",".join(sorted({c.name for c in configs.values()})) or config.name,
            "problems": len(report.problems),
            "duration_ms": round((time.monotonic() - started) * 1000),
        },
    )
    return Submission(report=report, runs=runs, configs=configs)


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
    *,
    fetched: Fetched,
    config: GraderConfig,
    params: AdvantageParams,
    scope: dict[str, Any],
    approval: ApprovalState | None = None,
) -> dict[str, Any]:
    approval = approval or grader_approval_state(config=config)
    return {
        "schema": SCHEMA_VERSION,
        **scope,
        "grader_config": config.name,
        "grader_approval": approval.as_json(),
        "params": params.as_json(),
        "complete": fetched.complete,
        "counts": fetched.counts(),
        "waited_seconds": round(fetched.waited_s, 3),
        "groups": fetched.groups,
    }
