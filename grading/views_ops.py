"""Health, readiness and the staff ops page.

`/healthz` is liveness: the process answers. It touches nothing else, so a database outage does
not make an orchestrator restart every web process. `/readyz` is readiness: this process can
serve real traffic (database round trip, broker reachable, migrations applied); 503 with the
failing probes otherwise, so a load balancer routes around it.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Any

from django.conf import settings
from django.contrib.auth.views import redirect_to_login
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET, require_safe

from gagar_site import ops
from grading.selectors_ops import grader_latency, run_backlog


@never_cache
@require_safe
def healthz(request: HttpRequest) -> JsonResponse:
    return JsonResponse({"status": "ok"})


@never_cache
@require_safe
def readyz(request: HttpRequest) -> JsonResponse:
    probes = ops.readiness()
    failing = [p for p in probes if not p.ok]
    body = {
        "status": "error" if failing else "ok",
        "checks": {p.name: {"ok": p.ok, "detail": p.detail} for p in probes},
    }
    if failing:
        body["reason"] = "; ".join(f"{p.name}: {p.detail}" for p in failing)
    return JsonResponse(body, status=503 if failing else 200)


def staff_required(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
    """Anonymous → the login page; signed in but not staff → 403 (not a login loop)."""

    @wraps(view)
    def wrapper(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        if not request.user.is_authenticated:
            return redirect_to_login(request.get_full_path())
        if not request.user.is_staff:
            raise PermissionDenied
        return view(request, *args, **kwargs)

    return wrapper


@never_cache
@require_GET
@staff_required
def ops_status(request: HttpRequest) -> HttpResponse:
    depths, unacked = ops.queue_depths()
    latency = grader_latency()
    backlog = run_backlog(stale_after_s=settings.GAGAR_GRADER_STALE_AFTER_S)
    if request.GET.get("format") == "json":
        return JsonResponse(
            {
                "broker": ops.broker_kind(),
                "queues": {d.queue: d.waiting for d in depths},
                "unacked": unacked,
                "grader_latency_s": {
                    "runs": latency.runs,
                    "p50": latency.p50_s,
                    "p95": latency.p95_s,
                    "max": latency.max_s,
                },
                "grader_runs": {
                    **backlog.by_status,
                    "stale_running": backlog.stale_running,
                    "failed_last_24h": backlog.failed_last_24h,
                    "succeeded_last_24h": backlog.succeeded_last_24h,
                },
            }
        )
    return render(
        request,
        "ops/status.html",
        {
            "broker": ops.broker_kind(),
            "depths": depths,
            "unacked": unacked,
            "latency": latency,
            "backlog": backlog,
        },
    )
