"""Grader runs: request them, execute one on a worker, reap the stuck ones.

A run is claimed with a conditional UPDATE (pending, or running with a stale heartbeat), the agent
runs outside any transaction while a thread beats `heartbeat_at`, and the result is written under
a row lock after re-checking that the claim is still ours. `deliveries` is the fencing token: a
worker that lost its claim (it was presumed dead and the run re-sent) can no longer write.
"""

from __future__ import annotations

import hashlib
import logging
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import timedelta
from functools import partial

from celery import current_app
from django.conf import settings
from django.db import (
    InterfaceError,
    OperationalError,
    close_old_connections,
    connection,
    transaction,
)
from django.db.models import F, Max, Q
from django.utils import timezone

from grading.grader import prompts
from grading.grader.backends.base import TransientBackendError
from grading.grader.backends.registry import BackendConfigError
from grading.grader.loop import GraderOutcome, LogRecord, run_grader
from grading.models import Attempt, CandidateGrade, GraderConfig, GraderEvent, GraderRun, Group
from grading.selectors.training import grader_config_by_name
from grading.services.data_version import data_changed
from grading.services.grader_events import event_row
from grading.services.grader_inputs import (
    backend_for,
    budget_for,
    context_window_for,
    endpoint_settings,
    group_input,
    pricing_for,
    rubric_for,
    sandbox_for,
)
from grading.services.grader_spend import (
    abandon_events,
    daily_spend_check,
    record_abandoned,
    run_cost,
)
from grading.task_names import RUN_GRADER

logger = logging.getLogger(__name__)
Status = GraderRun.Status


class ClaimLostError(Exception):
    """Another delivery took this run over (ours was presumed dead): stop without writing."""


def grader_config_default() -> GraderConfig:
    """The configuration named by the environment: the analysis grader unless an endpoint is
    configured (GAGAR_GRADER_BACKEND=heuristic selects the heuristic one).

    GAGAR_GRADER_BASE_URL alone switches to an OpenAI-compatible server (its model is discovered
    when GAGAR_GRADER_MODEL is unset); GAGAR_GRADER_BACKEND=anthropic selects Anthropic.
    """
    env = endpoint_settings()
    base_url = env.get("base_url", "")
    backend = env.get("backend") or ("openai" if base_url else GraderConfig.Backend.ANALYSIS)
    model = env.get("model", "")
    if backend in (GraderConfig.Backend.ANALYSIS, GraderConfig.Backend.HEURISTIC):
        name, model, base_url = f"default:{backend}", "", ""
    else:
        digest = hashlib.sha256(f"{backend}\n{model}\n{base_url}".encode()).hexdigest()[:10]
        name = f"default:{backend}:{model or 'auto'}"[:88] + f":{digest}"
    config, _ = GraderConfig.objects.get_or_create(
        name=name, defaults={"backend": backend, "model": model, "base_url": base_url}
    )
    return config


def grader_config_for(*, name: str | None) -> GraderConfig:
    """The configuration called `name`, or the default one when no name is given (the one rule
    every command and API view uses); raises GraderConfig.DoesNotExist for an unknown name."""
    return grader_config_by_name(name=name) if name else grader_config_default()


def _enqueue(run_id: int) -> None:
    # By name: grading.tasks imports this module (grading/task_names.py).
    current_app.tasks[RUN_GRADER].apply_async(kwargs={"run_id": run_id})


def grader_runs_request(
    *, groups: Iterable[Group], config: GraderConfig, replica: int = 0, enqueue: bool = True
) -> list[GraderRun]:
    """One run per group for (config, replica); existing runs are returned untouched.

    New runs are sent to the `grading` queue once the transaction commits (unless `enqueue` is
    off: the caller executes them itself). A broker outage does not undo the request: the
    reaper re-sends pending runs.
    """
    runs = []
    with transaction.atomic():
        for group in groups:
            run, created = GraderRun.objects.get_or_create(
                group=group,
                config=config,
                replica=replica,
                defaults={"heartbeat_at": timezone.now()},
            )
            runs.append(run)
            if created and enqueue:
                transaction.on_commit(partial(_enqueue, run.pk), robust=True)
    return runs


def grader_runs_regrade(*, runs: Iterable[GraderRun], enqueue: bool = True) -> list[GraderRun]:
    """ "Grade again": a failed run is reset and re-sent; a succeeded one gets a new replica
    (its verdict is kept for stability studies); an unfinished one is re-sent."""
    out: list[GraderRun] = []
    for run in runs:
        if run.status == Status.SUCCEEDED:
            top = GraderRun.objects.filter(
                group_id=run.group_id, config_id=run.config_id
            ).aggregate(top=Max("replica"))["top"]
            out += grader_runs_request(
                groups=[run.group], config=run.config, replica=top + 1, enqueue=enqueue
            )
            continue
        with transaction.atomic():
            if run.status == Status.FAILED:
                abandon_events(run_id=run.pk)
                GraderRun.objects.filter(pk=run.pk, status=Status.FAILED).update(
                    status=Status.PENDING,
                    failure_reason="",
                    problems=[],
                    heartbeat_at=timezone.now(),
                    finished_at=None,
                )
            if enqueue:
                transaction.on_commit(partial(_enqueue, run.pk), robust=True)
        out.append(run)
    return out


def _claimable(stale_before: object) -> Q:
    return Q(status=Status.PENDING) | (
        Q(status=Status.RUNNING) & (Q(heartbeat_at__lt=stale_before) | Q(heartbeat_at__isnull=True))
    )


def _claim(run_id: int, worker: str) -> int | None:
    """Take the run; returns our delivery number (the fencing token) or None if not ours."""
    now = timezone.now()
    stale_before = now - timedelta(seconds=settings.GAGAR_GRADER_STALE_AFTER_S)
    limit = settings.GAGAR_GRADER_MAX_DELIVERIES
    with transaction.atomic():
        claimable = GraderRun.objects.filter(pk=run_id).filter(_claimable(stale_before))
        taken = claimable.filter(deliveries__lt=limit).update(
            status=Status.RUNNING,
            deliveries=F("deliveries") + 1,
            claimed_by=worker[:200],
            heartbeat_at=now,
            started_at=now,
            finished_at=None,
        )
        if not taken:
            # A run that keeps killing its workers must not be re-sent forever.
            claimable.update(
                status=Status.FAILED,
                finished_at=now,
                failure_reason=f"gave up after {limit} deliveries (workers lost or timed out)",
            )
            return None
        # The transcript of an abandoned delivery would interleave with ours: start afresh, but
        # keep what its calls cost.
        abandon_events(run_id=run_id)
        return GraderRun.objects.values_list("deliveries", flat=True).get(pk=run_id)


def _release_connection() -> None:
    """With a connection pool (GAGAR_DB_POOL_MAX), hand this thread's connection back between
    database steps: a worker running many runs in threads then holds connections only while it
    writes, not while its runs wait on the model. Never inside a caller's transaction."""
    if settings.GAGAR_DB_POOL_MAX and not connection.in_atomic_block:
        connection.close()


def _released[**P, R](fn: Callable[P, R] | None) -> Callable[P, R] | None:
    if fn is None:
        return None

    def call(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return fn(*args, **kwargs)
        finally:
            _release_connection()

    return call


class _Heartbeat(threading.Thread):
    """Beats `heartbeat_at` while the agent works; notices when the claim was taken away."""

    def __init__(self, run_id: int, delivery: int, interval_s: float) -> None:
        super().__init__(name=f"grader-heartbeat-{run_id}", daemon=True)
        self.run_id, self.delivery, self.interval_s = run_id, delivery, interval_s
        self.lost = False
        self._stop_event = threading.Event()

    def run(self) -> None:
        try:
            while not self._stop_event.wait(self.interval_s):
                beat = GraderRun.objects.filter(
                    pk=self.run_id, status=Status.RUNNING, deliveries=self.delivery
                ).update(heartbeat_at=timezone.now())
                _release_connection()
                if not beat:
                    self.lost = True
                    return
        finally:
            connection.close()  # this thread's own connection

    def stop(self) -> None:
        self._stop_event.set()
        self.join(timeout=30)


@dataclass
class _Recorder:
    """Writes the transcript in batches, one INSERT per model call: the tool calls of a turn
    wait for the next model call's event and go with it; the rest goes with the result
    (`_finish`). A model call is never held back: what it cost must be in the database at once
    (daily limits read it, and an abandoned delivery's cost is moved onto the run from it).
    A worker killed between batches loses only tool events of a delivery that the next one
    abandons anyway (`abandon_events` deletes its transcript before it starts afresh), so no
    run is lost or duplicated; (run, seq) is unique, so a row written twice is a no-op."""

    run_id: int
    beat: _Heartbeat
    pending: list[GraderEvent] = field(default_factory=list)

    def __call__(self, record: LogRecord) -> None:
        if self.beat.lost:
            raise ClaimLostError(f"run {self.run_id} was taken over by another delivery")
        self.pending.append(event_row(self.run_id, record))
        if record.kind == "llm_call":
            self.flush()
        # Hand back the connection a tool used (a trajectory page is read from the database):
        # held across the next model call, 128 runs in threads queue for a pool of 16.
        _release_connection()

    def take(self) -> list[GraderEvent]:
        rows, self.pending = self.pending, []
        return rows

    def flush(self) -> None:
        rows = self.take()
        if rows:
            GraderEvent.objects.bulk_create(rows, ignore_conflicts=True)

    def flush_quietly(self) -> None:
        """Keep the transcript of a run that raised (whoever reads why it failed needs it);
        the run's own exception is the one that matters."""
        try:
            self.flush()
        except Exception:
            logger.exception("grader run %s: its last events were not written", self.run_id)


# The database itself is gone (not the run's fault): the claim goes stale and the reaper
# re-sends the run once it is back.
_DATABASE_DOWN = (OperationalError, InterfaceError)


def grader_run_execute(*, run_id: int, worker: str) -> None:
    """Claim, grade outside any transaction, then lock, re-check and write. Replays are no-ops.

    Any exception of a run (a bug, a malformed answer, a write the database refuses) ends it
    `failed` with the exception as its reason, so its group falls back to plain GRPO; the
    caller (a worker, `grade --inline`) carries on. Two exceptions propagate:
    TransientBackendError after releasing the claim, so that the task retries, and a lost
    database connection, which leaves the claim to go stale for the reaper.
    """
    delivery = _claim(run_id, worker)
    if delivery is None:
        logger.info("grader run %s is not claimable (finished or alive elsewhere)", run_id)
        return
    try:
        _execute(run_id, delivery)
    except (TransientBackendError, *_DATABASE_DOWN):
        raise
    except Exception as exc:
        logger.exception("grader run %s raised; it ends failed", run_id)
        if not connection.in_atomic_block:
            close_old_connections()
        _finish_failed(run_id, delivery, f"{type(exc).__name__}: {exc}")
        _release_connection()


def _execute(run_id: int, delivery: int) -> None:
    run = GraderRun.objects.select_related("config", "group__task").get(pk=run_id)
    config, task = run.config, run.group.task
    try:
        backend = backend_for(config)
        rubric, budget = rubric_for(config), budget_for(config)
        sandbox = sandbox_for(task_id=task.external_id, task_metadata=task.metadata or {})
        window, pricing = context_window_for(config, backend), pricing_for(config)
        version = prompts.resolve(config.prompt_version)
        fit = getattr(backend, "fit", None)  # the analysis backend's fitted artefact
        fit_version = str(getattr(fit, "version", ""))
    except (BackendConfigError, ValueError, TypeError, RuntimeError) as exc:
        _finish_failed(run_id, delivery, f"configuration: {exc}")
        return
    group = group_input(group_id=run.group_id)
    source = (
        (True, str(group.task.repo_path))
        if group.task.repo_path is not None
        else (False, f"no source: {group.task.source_note}")
    )
    spend_check = _released(daily_spend_check(config, pricing))
    _release_connection()  # the agent now waits on the model, not on the database
    beat = _Heartbeat(run_id, delivery, settings.GAGAR_GRADER_HEARTBEAT_S)
    beat.start()
    started = time.monotonic()
    logger.info(
        "grader run started",
        extra={
            "event": "grading.start",
            "run_id": run_id,
            "group_id": run.group_id,
            "grader_config": config.name,
            "delivery": delivery,
            "candidates": len(group.candidates),
        },
    )
    recorder = _Recorder(run_id, beat)
    try:
        outcome = run_grader(
            group,
            backend,
            sandbox=sandbox,
            rubric=rubric,
            budget=budget,
            seed=config.seed if config.seed is not None else run.replica,
            prompt_version=version,
            temperature=config.temperature,
            on_event=recorder,
            context_window=window,
            pricing=pricing,
            spend_check=spend_check,
        )
    except TransientBackendError as exc:
        # This delivery's calls are spent even though the run starts again.
        record_abandoned(run_id=run_id, deliveries=exc.deliveries, pricing=pricing)
        _release(run_id, delivery, f"transient backend error, will retry: {exc}")
        _release_connection()
        raise
    except ClaimLostError:
        logger.warning("grader run %s: claim lost, result discarded", run_id)
        return
    except _DATABASE_DOWN:
        raise
    except Exception:
        if not beat.lost:
            recorder.flush_quietly()
        raise
    finally:
        beat.stop()
        close = getattr(backend, "close", None)
        if callable(close):
            close()
    _finish(
        run_id,
        delivery,
        outcome,
        latency_s=round(time.monotonic() - started, 3),
        prompt_version=version,
        priced=pricing.known,
        source=source,
        fit_version=fit_version,
        events=recorder.take(),
    )
    _release_connection()


def _release(run_id: int, delivery: int, reason: str) -> None:
    GraderRun.objects.filter(pk=run_id, status=Status.RUNNING, deliveries=delivery).update(
        status=Status.PENDING, claimed_by="", heartbeat_at=timezone.now(), failure_reason=reason
    )


def _finish_failed(run_id: int, delivery: int, reason: str) -> None:
    GraderRun.objects.filter(pk=run_id, status=Status.RUNNING, deliveries=delivery).update(
        status=Status.FAILED, finished_at=timezone.now(), failure_reason=reason[:5000]
    )
    logger.warning(
        "grader run failed",
        extra={"event": "grading.failure", "run_id": run_id, "reason": reason[:500]},
    )


def grader_run_fail(*, run_id: int, reason: str) -> bool:
    """Mark an unfinished run failed (its group falls back to plain GRPO); False if finished."""
    return bool(
        GraderRun.objects.filter(pk=run_id, status__in=[Status.PENDING, Status.RUNNING]).update(
            status=Status.FAILED, finished_at=timezone.now(), failure_reason=reason[:5000]
        )
    )


def _grades(run: GraderRun, verdict: dict[str, object]) -> list[CandidateGrade]:
    """One grade per valid passing attempt the verdict judged: a candidate's grade goes to
    every passing attempt with the same patch (the grader saw them as one candidate)."""
    passing = dict(
        Attempt.objects.passing().filter(group_id=run.group_id).values_list("pk", "patch_id")
    )
    candidates = verdict.get("candidates")
    assert isinstance(candidates, dict)
    keys = {int(k) for k in candidates if k.isdigit()}
    rows = []
    for key, cand in candidates.items():
        # Only valid passing attempts are ranked; failed ones were context.
        if not key.isdigit() or int(key) not in passing or cand.get("tier") is None:
            continue
        patch = passing[int(key)]
        sharing = [
            pk
            for pk, p in passing.items()
            if pk == int(key) or (patch is not None and p == patch and pk not in keys)
        ]
        rows += [
            CandidateGrade(
                run=run,
                attempt_id=attempt_id,
                tier=cand["tier"],
                rank_in_tier=cand["rank_in_tier"],
                weighted_score=cand["weighted_score"],
                scores=cand["scores"],
                severe_issues=cand.get("severe_issues", []),
                exploit_suspected=bool(cand.get("exploit_suspected")),
                summary=cand.get("summary", ""),
            )
            for attempt_id in sharing
        ]
    return rows


def _finish(
    run_id: int,
    delivery: int,
    outcome: GraderOutcome,
    *,
    latency_s: float,
    prompt_version: str,
    priced: bool,
    source: tuple[bool, str],
    fit_version: str = "",
    events: list[GraderEvent] | None = None,
) -> None:
    """Write the outcome, and the transcript's last events with it, if the claim is still
    ours."""
    # The run may have kept this connection idle for many minutes: reconnect if the server
    # dropped it (never inside a caller's transaction, e.g. a test's).
    if not connection.in_atomic_block:
        close_old_connections()
    use = outcome.budget_use
    with transaction.atomic():
        run = GraderRun.objects.select_for_update().get(pk=run_id)
        if run.status != Status.RUNNING or run.deliveries != delivery:
            logger.warning("grader run %s changed hands before its result was written", run_id)
            return
        if events:
            GraderEvent.objects.bulk_create(events, ignore_conflicts=True)
        run.finished_at = timezone.now()
        run.latency_s = latency_s
        run.input_tokens, run.output_tokens = use.input_tokens, use.output_tokens
        run.cached_input_tokens = use.cached_input_tokens
        run.usage_estimated = use.usage_estimated
        run.peak_context_tokens = use.peak_context
        run.abandoned_input_tokens += use.abandoned_input_tokens
        run.abandoned_output_tokens += use.abandoned_output_tokens
        run.llm_calls, run.tool_calls = use.llm_calls, use.tool_calls
        run.cost_usd = run_cost(use.cost_usd, run.abandoned_cost_usd) if priced else None
        run.prompt_version = prompt_version
        run.fit_version = fit_version
        run.alias_map = outcome.alias_map
        run.problems = [str(p) for p in outcome.problems]
        run.has_source, run.source_note = source
        if outcome.status == "ok" and outcome.verdict is not None:
            run.status, run.verdict, run.failure_reason = Status.SUCCEEDED, outcome.verdict, ""
            CandidateGrade.objects.bulk_create(_grades(run, outcome.verdict), ignore_conflicts=True)
            data_changed()
        else:
            run.status, run.failure_reason = Status.FAILED, outcome.reason or "no verdict"
        run.save()
    logger.log(
        logging.INFO if run.status == Status.SUCCEEDED else logging.WARNING,
        "grader run finished",
        extra={
            "event": "grading.finish" if run.status == Status.SUCCEEDED else "grading.failure",
            "run_id": run_id,
            "group_id": run.group_id,
            "grader_config_id": run.config_id,
            "status": run.status,
            "reason": run.failure_reason[:500],
            "duration_ms": round(latency_s * 1000),
            "llm_calls": use.llm_calls,
            "tool_calls": use.tool_calls,
            "input_tokens": use.input_tokens,
            "output_tokens": use.output_tokens,
            "cost_usd": float(run.cost_usd) if run.cost_usd is not None else None,
        },
    )


def grader_runs_reap() -> list[int]:
    """Return stuck runs to pending and re-send them: running ones whose heartbeat went silent,
    and pending ones whose message may have been lost (at most once per resend period)."""
    now = timezone.now()
    stale_before = now - timedelta(seconds=settings.GAGAR_GRADER_STALE_AFTER_S)
    resend_before = now - timedelta(seconds=settings.GAGAR_GRADER_PENDING_RESEND_S)
    stuck = (
        Q(status=Status.RUNNING, heartbeat_at__lt=stale_before)
        | Q(status=Status.RUNNING, heartbeat_at__isnull=True)
        | Q(status=Status.PENDING, heartbeat_at__lt=resend_before)
        | Q(status=Status.PENDING, heartbeat_at__isnull=True, created_at__lt=resend_before)
    )
    with transaction.atomic():
        ids = list(
            GraderRun.objects.select_for_update(skip_locked=True)
            .filter(stuck)
            .order_by("pk")
            .values_list("pk", flat=True)[:500]
        )
        # Each UPDATE re-checks the condition: a worker may have claimed a run meanwhile.
        GraderRun.objects.filter(pk__in=ids).filter(stuck, status=Status.RUNNING).update(
            status=Status.PENDING,
            claimed_by="",
            heartbeat_at=now,
            failure_reason=f"worker lost: silent since before {stale_before:%H:%M:%S}; re-sent",
        )
        GraderRun.objects.filter(pk__in=ids).filter(stuck, status=Status.PENDING).update(
            heartbeat_at=now
        )
        for run_id in ids:
            transaction.on_commit(partial(_enqueue, run_id), robust=True)
    if ids:
        logger.info("re-sent %d stuck grader runs", len(ids))
    return ids
