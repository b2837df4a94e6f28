from __future__ import annotations

import io
import json
import logging
import os
import subprocess
import sys

import pytest

from gagar_site.logging import JsonFormatter, RequestIdFilter, access_logger
from tests.conftest import PROJECT_ROOT


@pytest.fixture
def json_access_log():
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(JsonFormatter())
    handler.addFilter(RequestIdFilter())
    previous = access_logger.level
    access_logger.addHandler(handler)
    access_logger.setLevel(logging.DEBUG)
    yield stream
    access_logger.removeHandler(handler)
    access_logger.setLevel(previous)


def _lines(stream: io.StringIO) -> list[dict]:
    return [json.loads(line) for line in stream.getvalue().splitlines()]


@pytest.mark.django_db
def test_each_request_writes_one_json_line_with_id_path_and_status(client, json_access_log):
    response = client.get("/accounts/login/")
    (line,) = _lines(json_access_log)
    assert line["message"] == "GET /accounts/login/ 200"
    assert line["path"] == "/accounts/login/"
    assert line["status"] == 200
    assert line["method"] == "GET"
    assert line["user_id"] is None
    assert line["request_id"] == response["X-Request-ID"]
    assert len(line["request_id"]) == 32
    assert line["level"] == "INFO"
    assert isinstance(line["duration_ms"], float)


@pytest.mark.django_db
def test_it_keeps_a_sane_request_id_from_the_proxy_and_replaces_a_hostile_one(
    client, json_access_log
):
    ok = client.get("/healthz", HTTP_X_REQUEST_ID="edge-7f3a:1")
    bad = client.get("/healthz", HTTP_X_REQUEST_ID='x"\n{"forged": true}')
    assert ok["X-Request-ID"] == "edge-7f3a:1"
    assert bad["X-Request-ID"] != 'x"\n{"forged": true}'
    first, second = _lines(json_access_log)
    assert first["request_id"] == "edge-7f3a:1"
    assert "forged" not in second
    # Probes are logged at DEBUG so they do not drown the access log.
    assert first["level"] == "DEBUG"


def test_log_format_json_makes_every_line_json(tmp_path):
    env = {
        **os.environ,
        "LOG_FORMAT": "json",
        "SECRET_KEY": "x" * 50,
        "DJANGO_SETTINGS_MODULE": "gagar_site.settings",
        "GAGAR_VAR_DIR": str(tmp_path),
    }
    code = (
        "import logging; log = logging.getLogger('gagar.test');"
        "log.warning('hello %s', 'world', extra={'group_id': 7});"
        "\ntry:\n    1/0\nexcept ZeroDivisionError:\n    log.exception('boom')"
    )
    result = subprocess.run(
        [sys.executable, "manage.py", "shell", "-c", code],
        cwd=PROJECT_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    lines = [json.loads(line) for line in result.stderr.splitlines() if line.strip()]
    hello = next(line for line in lines if line["message"].startswith("hello"))
    assert hello["message"] == "hello world"
    assert hello["group_id"] == 7
    assert hello["level"] == "WARNING"
    boom = next(line for line in lines if line["message"] == "boom")
    assert "ZeroDivisionError" in boom["exc_info"]


def test_an_unknown_log_format_fails_loudly(tmp_path):
    env = {
        **os.environ,
        "LOG_FORMAT": "xml",
        "SECRET_KEY": "x" * 50,
        "GAGAR_VAR_DIR": str(tmp_path),
    }
    result = subprocess.run(
        [sys.executable, "manage.py", "check"],
        cwd=PROJECT_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode != 0
    assert "LOG_FORMAT" in result.stderr
