from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from grading.models import GraderConfig, GraderRun, Group, Run, Step, Task
from grading.selectors.ops import percentile
from tests._env import redis_url


def _group(n: int) -> Group:
    task = Task.objects.create(
        external_id=f"task-{n}", repo="o/r", problem_statement="p", content_hash="h"
    )
    step = Step.objects.create(run=Run.objects.get_or_create(name="r")[0], number=n)
    return Group.objects.create(step=step, task=task, content_hash=f"g{n}")


def _runs(latencies: list[float], status=GraderRun.Status.SUCCEEDED) -> None:
    config, _ = GraderConfig.objects.get_or_create(name="h", backend="heuristic")
    now = timezone.now()
    for i, latency in enumerate(latencies):
        GraderRun.objects.create(
            group=_group(len(latencies) * 100 + i + (0 if status == "succeeded" else 50)),
            config=config,
            status=status,
            verdict={} if status == GraderRun.Status.SUCCEEDED else None,
            latency_s=latency,
            finished_at=now - timedelta(minutes=i),
        )


def test_it_sends_anonymous_visitors_to_the_login_page(client, db):
    response = client.get("/ops/")
    assert response.status_code == 302
    assert response["Location"].startswith("/accounts/login/?next=/ops/")


def test_it_refuses_reviewers(client, reviewer):
    client.force_login(reviewer)
    assert client.get("/ops/").status_code == 403
    assert client.get("/ops/?format=json").status_code == 403


def test_it_shows_staff_the_queues_and_grader_latency(client, staff):
    _runs([float(s) for s in range(1, 21)])  # 1..20 s
    _runs([999.0], status=GraderRun.Status.RUNNING)
    client.force_login(staff)
    response = client.get("/ops/")
    assert response.status_code == 200
    html = response.content.decode()
    assert "grading" in html and "default" in html
    assert "p50 10.5 s" in html
    assert "p95 19.1 s" in html

    data = client.get("/ops/?format=json").json()
    assert data["grader_latency_s"]["runs"] == 20
    assert data["grader_latency_s"]["p50"] == pytest.approx(10.5)
    assert data["grader_latency_s"]["p95"] == pytest.approx(19.05)
    assert data["grader_runs"]["running"] == 1
    assert data["grader_runs"]["succeeded_last_24h"] == 20
    # The test settings use the filesystem broker: depths are counted, nothing is queued.
    assert data["broker"] == "filesystem"
    assert set(data["queues"]) == {"grading", "default"}


def test_it_shows_unknown_depths_when_the_broker_is_down(client, staff, settings, closed_port):
    settings.CELERY_BROKER_URL = f"redis://127.0.0.1:{closed_port}/0"
    client.force_login(staff)
    data = client.get("/ops/?format=json").json()
    assert data["queues"] == {"grading": None, "default": None}
    assert client.get("/ops/").status_code == 200


@pytest.mark.redis
def test_it_counts_waiting_messages_in_redis_queues(client, staff, settings):
    import redis

    url = redis_url(2)
    settings.CELERY_BROKER_URL = url
    r = redis.Redis.from_url(url)
    keys = ["grading", "grading\x06\x163", "default"]
    r.delete(*keys)
    try:
        r.lpush("grading", "m1", "m2")
        r.lpush("grading\x06\x163", "m3")  # kombu's list for priority step 3
        r.lpush("default", "m4")
        client.force_login(staff)
        data = client.get("/ops/?format=json").json()
    finally:
        r.delete(*keys)
    assert data["queues"] == {"grading": 3, "default": 1}
    assert data["broker"] == "redis"


def test_percentile_interpolates_like_numpy():
    import numpy as np

    values = sorted([3.0, 1.0, 4.0, 1.5, 9.0, 2.6])
    for q in (0.0, 0.5, 0.95, 1.0):
        assert percentile(values, q) == pytest.approx(float(np.percentile(values, q * 100)))
    assert percentile([], 0.5) is None
