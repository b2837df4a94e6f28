from __future__ import annotations

import pytest
from django.db import connection, connections
from django.db.migrations.recorder import MigrationRecorder
from django.db.utils import load_backend

from gagar_site import ops
from tests._env import redis_url


def _broken_postgres(port: int):
    """A second connection alias pointing at a port where no database listens."""
    backend = load_backend("django.db.backends.postgresql")
    settings_dict = {
        **connections["default"].settings_dict,
        "ENGINE": "django.db.backends.postgresql",
        "NAME": "gagar",
        "USER": "gagar",
        "PASSWORD": "",
        "HOST": "127.0.0.1",
        "PORT": str(port),
        "OPTIONS": {"connect_timeout": 2},
    }
    return backend.DatabaseWrapper(settings_dict, alias="replica")


def test_it_answers_liveness_without_touching_anything(client):
    # No database access is allowed in this test: a query would raise.
    response = client.get("/healthz")
    assert response.status_code == 200
    assert response.json() == {"status": "ok"}


@pytest.mark.django_db
def test_it_is_ready_when_database_migrations_and_broker_are_fine(client, monkeypatch):
    monkeypatch.setattr(ops, "_migrations_seen_applied", False)
    response = client.get("/readyz")
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["status"] == "ok"
    assert set(body["checks"]) == {"database:default", "migrations", "broker"}
    assert all(check["ok"] for check in body["checks"].values())


@pytest.mark.django_db
def test_it_answers_503_with_a_reason_when_a_database_is_unreachable(
    client, monkeypatch, closed_port
):
    broken = _broken_postgres(closed_port)
    real_readiness = ops.readiness
    monkeypatch.setattr(
        ops, "readiness", lambda databases=None: real_readiness([connection, broken])
    )
    try:
        response = client.get("/readyz")
    finally:
        broken.close()
    assert response.status_code == 503
    body = response.json()
    assert body["status"] == "error"
    assert body["checks"]["database:default"]["ok"] is True
    assert body["checks"]["database:replica"]["ok"] is False
    assert "database:replica" in body["reason"]
    assert "OperationalError" in body["reason"]


@pytest.mark.django_db
def test_it_is_not_ready_while_a_migration_is_unapplied(client, monkeypatch):
    monkeypatch.setattr(ops, "_migrations_seen_applied", False)
    # Inside the test's transaction: rolled back afterwards.
    MigrationRecorder(connection).record_unapplied("grading", "0001_initial")
    response = client.get("/readyz")
    assert response.status_code == 503
    assert "grading.0001_initial" in response.json()["reason"]


@pytest.mark.django_db
def test_it_is_not_ready_when_the_filesystem_broker_cannot_be_written(client, settings, tmp_path):
    missing = tmp_path / "nowhere"
    settings.CELERY_BROKER_URL = "filesystem://"
    settings.CELERY_BROKER_TRANSPORT_OPTIONS = {
        "data_folder_in": str(missing),
        "data_folder_out": str(missing),
    }
    response = client.get("/readyz")
    assert response.status_code == 503
    assert "broker" in response.json()["reason"]
    assert str(missing) in response.json()["reason"]


@pytest.mark.django_db
def test_it_is_not_ready_when_the_redis_broker_is_down(client, settings, closed_port):
    settings.CELERY_BROKER_URL = f"redis://127.0.0.1:{closed_port}/0"
    response = client.get("/readyz")
    assert response.status_code == 503
    assert response.json()["checks"]["broker"]["ok"] is False
    assert "redis" in response.json()["reason"]


@pytest.mark.redis
@pytest.mark.django_db
def test_it_is_ready_against_a_live_redis_broker(client, settings):
    settings.CELERY_BROKER_URL = redis_url()
    response = client.get("/readyz")
    assert response.status_code == 200, response.content
    assert response.json()["checks"]["broker"] == {"ok": True, "detail": "redis"}


def test_probes_are_exempt_from_the_https_redirect(settings, client):
    settings.SECURE_SSL_REDIRECT = True
    assert client.get("/healthz").status_code == 200
    assert client.get("/accounts/login/").status_code == 301
