"""`manage.py grade`: groups without candidates are named and refused unless --allow-empty;
`--inline` grades in the calling process and sends nothing to the broker."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from io import StringIO

import pytest
import redis
from django.core.management import call_command
from django.core.management.base import CommandError

from gagar_site.celery import app
from grading.domain.bundle import group_from_object
from grading.models import GraderRun, Group
from grading.services.imports import groups_import
from tests._env import redis_url
from tests.importers.helpers import attempt, group


def import_groups(*objects: dict) -> list[Group]:
    report = groups_import(records=[group_from_object(o, source="t") for o in objects])
    assert report.ok, report.problems
    return list(Group.objects.order_by("pk"))


def failing_only(task_id: str) -> dict:
    return group(
        task_id,
        attempts=[attempt("a1", test_reward=0.0), attempt("a2", test_reward=0.0, patch=None)],
    )


@pytest.mark.django_db
def test_it_refuses_groups_without_candidates_unless_allowed(settings):
    settings.GAGAR_SANDBOX = "none"
    (g,) = import_groups(failing_only("t-1"))
    with pytest.raises(CommandError, match="no candidates: none of the 1 requested groups"):
        call_command("grade", "--all", "--inline", stdout=StringIO())
    out = StringIO()
    call_command("grade", "--group", str(g.pk), "--inline", "--allow-empty", stdout=out)
    assert f"group {g.pk} (t-1): no passing candidate, not graded" in out.getvalue()
    assert not GraderRun.objects.exists()


@pytest.mark.django_db
def test_it_grades_the_groups_with_candidates_and_names_the_others(settings):
    settings.GAGAR_SANDBOX = "none"
    empty, full = import_groups(failing_only("t-1"), group("t-2"))
    out = StringIO()
    call_command("grade", "--all", "--inline", stdout=out)
    assert f"group {empty.pk} (t-1): no passing candidate, not graded" in out.getvalue()
    assert list(GraderRun.objects.values_list("group_id", "status")) == [(full.pk, "succeeded")]


@contextmanager
def own_broker() -> Iterator[redis.Redis]:
    """This process's Celery app on the test Redis database (emptied before and after)."""
    url = redis_url()
    client = redis.Redis.from_url(url)
    client.flushdb()
    saved = app.conf.broker_url
    app.conf.update(broker_url=url)
    _reset_pools()
    try:
        yield client
    finally:
        app.conf.update(broker_url=saved)
        _reset_pools()
        client.flushdb()
        client.close()


def _reset_pools() -> None:
    # The app caches its connection and producer pools on first use.
    setattr(app, "_pool", None)  # noqa: B010
    setattr(app.amqp, "_producer_pool", None)  # noqa: B010


def queued(client: redis.Redis) -> dict[bytes, int]:
    return {k: client.llen(k) for k in client.scan_iter() if client.type(k) == b"list"}


@pytest.mark.redis
@pytest.mark.django_db(transaction=True)
def test_inline_grading_leaves_no_message_in_the_broker(settings):
    settings.GAGAR_SANDBOX = "none"
    (g,) = import_groups(group("t-1"))
    with own_broker() as client:
        call_command("grade", "--group", str(g.pk), "--inline", stdout=StringIO())
        assert GraderRun.objects.get().status == GraderRun.Status.SUCCEEDED
        assert not any(queued(client).values())
        call_command("grade", "--group", str(g.pk), "--inline", "--again", stdout=StringIO())
        assert list(GraderRun.objects.order_by("replica").values_list("status", flat=True)) == [
            "succeeded",
            "succeeded",
        ]
        assert not any(queued(client).values())
        # The same request without --inline is a message for a worker (the check can fail).
        call_command("grade", "--group", str(g.pk), "--replica", "5", stdout=StringIO())
        assert queued(client).get(b"grading") == 1
