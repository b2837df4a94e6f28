"""Prometheus metrics at `/metrics` (text exposition format), for the people who run GAGAR.

Two kinds of figures:
- read from the database and the broker at scrape time, so every web process answers the same
  and nothing is lost when a worker restarts: Celery queue depth, grader runs by status (in
  flight = running), run durations, tokens and cost per configuration, the advantage fallback
  share, import volume;
- measured in the web process: HTTP latency by view (a histogram per process; with
  `PROMETHEUS_MULTIPROC_DIR` set, prometheus_client's multiprocess mode adds up gunicorn's
  workers).

Reachable from the addresses in `GAGAR_METRICS_ALLOW` (default loopback), or from anywhere with
`Authorization: Bearer <GAGAR_METRICS_TOKEN>` when that is set.
"""

from __future__ import annotations

import hmac
import ipaddress
import os
import time
from collections.abc import Callable, Iterator
from typing import Any

from django.conf import settings
from django.http import HttpRequest, HttpResponse, HttpResponseBase
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Histogram, generate_latest
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)
from prometheus_client.registry import Collector

from gagar_site.login_throttle import client_ip
from gagar_site.ops import queue_depths
from grading.selectors.ops import import_volume, metrics_figures

PROCESS_REGISTRY = CollectorRegistry()
HTTP_LATENCY = Histogram(
    "gagar_http_request_duration_seconds",
    "HTTP request duration by view (URL name), method and status class.",
    ["view", "method", "status"],
    registry=PROCESS_REGISTRY,
    buckets=(0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 600.0),
)


def _view_name(request: HttpRequest) -> str:
    # The URL pattern's name, never the path: paths carry ids and would make unbounded labels.
    match = getattr(request, "resolver_match", None)
    if match is None:
        return "unmatched"
    return match.view_name or match.route or "unnamed"


class MetricsMiddleware:
    """Times each request into HTTP_LATENCY (after URL resolution, so the view is known)."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponseBase]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponseBase:
        started = time.perf_counter()
        response = self.get_response(request)
        HTTP_LATENCY.labels(
            view=_view_name(request),
            method=request.method or "",
            status=f"{response.status_code // 100}xx",
        ).observe(time.perf_counter() - started)
        return response


class ScrapeCollector(Collector):
    """The database and broker figures, read at each scrape."""

    def collect(self) -> Iterator[Metric]:
        depth = GaugeMetricFamily(
            "gagar_celery_queue_depth", "Messages waiting in a Celery queue.", labels=["queue"]
        )
        unacked = GaugeMetricFamily(
            "gagar_celery_unacked", "Messages delivered but not acknowledged (Redis broker)."
        )
        depths, n_unacked = queue_depths()  # the ops page's reading; never raises
        up = GaugeMetricFamily("gagar_broker_up", "1 when the broker answered this scrape.")
        up.add_metric([], 1.0 if all(d.waiting is not None for d in depths) else 0.0)
        for d in depths:
            if d.waiting is not None:
                depth.add_metric([d.queue], d.waiting)
        if n_unacked is not None:
            unacked.add_metric([], n_unacked)
        yield from (depth, unacked, up)

        figures = metrics_figures()
        runs = GaugeMetricFamily(
            "gagar_grader_runs", "Grader runs by status.", labels=["config", "status"]
        )
        in_flight = GaugeMetricFamily(
            "gagar_grader_runs_in_flight", "Grader runs running now.", labels=["config"]
        )
        tokens = CounterMetricFamily(
            "gagar_grader_tokens", "Model tokens used by grader runs.", labels=["config", "kind"]
        )
        cost = CounterMetricFamily(
            "gagar_grader_cost_usd", "Cost of grader runs, in USD.", labels=["config"]
        )
        durations = HistogramMetricFamily(
            "gagar_grader_run_duration_seconds",
            "Duration of finished grader runs.",
            labels=["config"],
        )
        fallback = GaugeMetricFamily(
            "gagar_advantage_fallback_ratio",
            "Share of stored group advantages that fell back to plain GRPO.",
            labels=["config"],
        )
        for name, f in figures.items():
            for status, n in f.runs_by_status.items():
                runs.add_metric([name, status], n)
            in_flight.add_metric([name], f.runs_by_status.get("running", 0))
            tokens.add_metric([name, "input"], f.input_tokens)
            tokens.add_metric([name, "output"], f.output_tokens)
            cost.add_metric([name], f.cost_usd)
            durations.add_metric(
                [name],
                buckets=[(_bound(b), n) for b, n in f.duration_buckets],
                sum_value=f.duration_sum_s,
            )
            if f.advantage_groups:
                fallback.add_metric([name], f.fallback_groups / f.advantage_groups)
        yield from (runs, in_flight, tokens, cost, durations, fallback)

        imported = GaugeMetricFamily(
            "gagar_imported", "Imported objects in the database.", labels=["kind"]
        )
        for kind, n in import_volume().items():
            imported.add_metric([kind], n)
        yield imported


def _bound(b: float) -> str:
    return "+Inf" if b == float("inf") else repr(b)


def _allowed(request: HttpRequest) -> bool:
    token = settings.GAGAR_METRICS_TOKEN
    header = request.headers.get("Authorization", "")
    if token and header.startswith("Bearer "):
        return hmac.compare_digest(header.removeprefix("Bearer ").strip(), token)
    try:
        address = ipaddress.ip_address(client_ip(request))
    except ValueError:
        return False
    return any(address in net for net in settings.GAGAR_METRICS_ALLOW)


def _registry() -> CollectorRegistry:
    registry = CollectorRegistry()
    registry.register(ScrapeCollector())
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        from prometheus_client import multiprocess

        multiprocess.MultiProcessCollector(registry)
    else:
        registry.register(_ProcessCollector())
    return registry


class _ProcessCollector(Collector):
    def collect(self) -> Iterator[Metric]:
        yield from PROCESS_REGISTRY.collect()


def metrics_view(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
    if not _allowed(request):
        return HttpResponse(
            "metrics: not from this address\n", status=403, content_type="text/plain"
        )
    return HttpResponse(generate_latest(_registry()), content_type=CONTENT_TYPE_LATEST)
