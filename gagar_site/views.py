"""Site-wide pages: the home redirect, health, readiness and the staff ops page.

`/healthz` is liveness: the process answers. It touches nothing else, so a database outage does
not make an orchestrator restart every web process. `/readyz` is readiness: this process can
serve real traffic (database round trip, broker reachable, migrations applied); 503 with the
failing probes otherwise, so a load balancer routes around it.
"""

from __future__ import annotations

from django.conf import settings
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET, require_safe

from gagar_site import ops
from gagar_site.access import staff_required
from grading.selectors.ops import grader_latency, run_backlog


def home(request: HttpRequest) -> HttpResponse:
    if not request.user.is_authenticated:
        return redirect("login")
    if request.user.is_staff:
        # Staff start from the studies they run; the admin, dashboards and ops are in the top bar.
        return redirect("review:staff-list")
    # Reviewers live in their queue.
    return redirect("review:queue")


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
