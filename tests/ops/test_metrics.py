"""/metrics: Prometheus' text format (parsed with prometheus_client's own parser), restricted to
allowed addresses or a bearer token, with queue depth from a real Redis broker, runs in flight,
durations, tokens and cost per configuration, fallback share, import volume and HTTP latency."""

from __future__ import annotations

import pytest
import redis
from prometheus_client.parser import text_string_to_metric_families

from grading.models import GraderRun
from grading.services.advantages import group_advantages_refresh
from tests._env import redis_url
from tests.training.builders import config, grade, import_groups, step_group

pytestmark = pytest.mark.django_db


def _samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    out = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


def test_metrics_are_refused_outside_the_allowed_networks_without_the_token(client, settings):
    settings.GAGAR_METRICS_TOKEN = "s3cret-metrics"
    assert client.get("/metrics", REMOTE_ADDR="203.0.113.9").status_code == 403
    wrong = client.get("/metrics", REMOTE_ADDR="203.0.113.9", HTTP_AUTHORIZATION="Bearer nope")
    assert wrong.status_code == 403
    ok = client.get(
        "/metrics", REMOTE_ADDR="203.0.113.9", HTTP_AUTHORIZATION="Bearer s3cret-metrics"
    )
    assert ok.status_code == 200
    assert client.get("/metrics").status_code == 200  # the test client is 127.0.0.1
    settings.GAGAR_METRICS_TOKEN = ""
    no_token = client.get("/metrics", REMOTE_ADDR="203.0.113.9", HTTP_AUTHORIZATION="Bearer ")
    assert no_token.status_code == 403


@pytest.mark.redis
def test_metrics_report_queues_runs_cost_fallbacks_imports_and_latency(client, settings):
    url = redis_url()
    settings.CELERY_BROKER_URL = url
    queue = "grading"  # this test's own Redis database: nothing else uses its queues
    broker = redis.Redis.from_url(url)
    broker.delete(queue)
    broker.lpush(queue, "m1", "m2", "m3")
    try:
        cfg = config()
        g1, g2 = import_groups(step_group("t-0"), step_group("t-1"))
        run = grade(g1, cfg, {"p1": (1, 1), "p2": (2, 1), "p3": (2, 2), "p4": (3, 1)})
        GraderRun.objects.filter(pk=run.pk).update(
            latency_s=42.0, input_tokens=1000, output_tokens=50, cost_usd="0.25"
        )
        GraderRun.objects.create(group=g2, config=cfg, status=GraderRun.Status.RUNNING)
        group_advantages_refresh(group_ids=[g1.pk, g2.pk], config=cfg)
        client.get("/healthz")
        response = client.get("/metrics")
    finally:
        broker.delete(queue)
        broker.close()
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/plain")
    s = _samples(response.content.decode())
    name = (("config", cfg.name),)
    assert s[("gagar_celery_queue_depth", (("queue", queue),))] == 3
    assert s[("gagar_broker_up", ())] == 1
    assert s[("gagar_grader_runs_in_flight", name)] == 1
    assert s[("gagar_grader_runs", (("config", cfg.name), ("status", "succeeded")))] == 1
    assert s[("gagar_grader_tokens_total", (("config", cfg.name), ("kind", "input")))] == 1000
    assert s[("gagar_grader_cost_usd_total", name)] == 0.25
    assert s[("gagar_grader_run_duration_seconds_count", name)] == 1
    assert s[("gagar_grader_run_duration_seconds_sum", name)] == 42.0
    assert (
        s[("gagar_grader_run_duration_seconds_bucket", (("config", cfg.name), ("le", "30.0")))] == 0
    )
    assert (
        s[("gagar_grader_run_duration_seconds_bucket", (("config", cfg.name), ("le", "60.0")))] == 1
    )
    # One of the two groups has a verdict; the other (still running) falls back.
    assert s[("gagar_advantage_fallback_ratio", name)] == 0.5
    assert s[("gagar_imported", (("kind", "attempts"),))] == 16
    health = (("method", "GET"), ("status", "2xx"), ("view", "healthz"))
    assert s[("gagar_http_request_duration_seconds_count", health)] >= 1


def test_imports_submits_grading_and_exports_write_structured_log_events(tmp_path, caplog):
    import logging

    from grading.services.exports import advantages_export

    caplog.set_level(logging.INFO)
    cfg = config()
    (g,) = import_groups(step_group("t-0"))
    grade(g, cfg, {"p1": (1, 1), "p2": (2, 1), "p3": (2, 2), "p4": (3, 1)})
    from grading.services.advantages import AdvantageParams

    advantages_export(
        run_name="run-1",
        step=None,
        fmt="jsonl",
        out_dir=tmp_path,
        config=cfg,
        params=AdvantageParams(),
    )
    events = {getattr(r, "event", None): r for r in caplog.records}
    imported = events["import.done"]
    assert imported.attempts_created == 8 and imported.groups == 1
    assert isinstance(imported.duration_ms, int)
    exported = events["export.written"]
    assert exported.kind == "advantages" and exported.counts["attempts"] == 8
    assert exported.schema == "gagar.v2"
