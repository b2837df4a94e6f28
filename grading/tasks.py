"""Celery tasks: interfaces only (ids in, one service call). Routed to the `grading` queue."""

from __future__ import annotations

from typing import Any

from celery import Task, shared_task
from django.conf import settings

from grading.grader.backends.base import TransientBackendError
from grading.services.grader_runs import grader_run_execute, grader_run_fail, grader_runs_reap
from grading.task_names import REAP_STUCK_RUNS, RUN_GRADER


class GraderTask(Task):
    def on_failure(self, exc: Exception, task_id: str, args: Any, kwargs: Any, einfo: Any) -> None:
        # Final failure (retries exhausted, time limit, a bug): the group falls back to plain GRPO
        # and the reason is visible on the run.
        run_id = kwargs.get("run_id") if kwargs else (args[0] if args else None)
        if run_id is None:
            return
        if isinstance(exc, TransientBackendError):
            reason = f"retries exhausted ({self.request.retries}): {exc}"
        else:
            reason = f"{type(exc).__name__}: {exc}"
        grader_run_fail(run_id=int(run_id), reason=reason)


@shared_task(
    name=RUN_GRADER,
    base=GraderTask,
    bind=True,
    acks_late=True,
    reject_on_worker_lost=True,
    autoretry_for=(TransientBackendError,),
    max_retries=settings.GAGAR_GRADER_TASK_MAX_RETRIES,
    retry_backoff=settings.GAGAR_GRADER_RETRY_BACKOFF_S,
    retry_backoff_max=3600,
    retry_jitter=True,
    soft_time_limit=settings.GAGAR_GRADER_SOFT_TIME_LIMIT_S,
    time_limit=settings.GAGAR_GRADER_TIME_LIMIT_S,
)
def run_grader_task(self: GraderTask, run_id: int) -> None:
    grader_run_execute(run_id=run_id, worker=f"{self.request.hostname}/{self.request.id}")


@shared_task(name=REAP_STUCK_RUNS, acks_late=True)
def reap_stuck_runs() -> int:
    return len(grader_runs_reap())
