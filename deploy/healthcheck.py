"""Container health checks, run inside the image by compose (no curl in the slim image).

    python deploy/healthcheck.py web              GET /readyz on the local gunicorn → 200
    python deploy/healthcheck.py worker NODE      the local Celery worker NODE@<hostname> answers
    python deploy/healthcheck.py broker           the configured Celery broker answers

Exit status 0 means healthy.
"""

from __future__ import annotations

import http.client
import os
import socket
import sys
from pathlib import Path


def _host_header() -> str:
    # Django rejects unknown Host headers; use the first concrete ALLOWED_HOSTS entry.
    for host in os.environ.get("ALLOWED_HOSTS", "localhost").split(","):
        host = host.strip().lstrip(".")
        if host and host != "*":
            return host
    return "localhost"


def check_web() -> int:
    port = int(os.environ.get("GUNICORN_BIND", "0.0.0.0:8000").rsplit(":", 1)[1])
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    try:
        conn.request("GET", "/readyz", headers={"Host": _host_header()})
        response = conn.getresponse()
        body = response.read(2000).decode(errors="replace")
    except OSError as exc:
        print(f"web: {exc}", file=sys.stderr)
        return 1
    if response.status != 200:
        print(f"web: /readyz answered {response.status}: {body}", file=sys.stderr)
        return 1
    return 0


def _django() -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "gagar_site.settings")
    import django

    django.setup()


def check_worker(node: str) -> int:
    _django()
    from gagar_site.celery import app

    destination = f"{node}@{socket.gethostname()}"
    replies = app.control.ping(destination=[destination], timeout=5.0)
    if not replies:
        print(f"worker: {destination} did not answer a ping", file=sys.stderr)
        return 1
    return 0


def check_broker() -> int:
    _django()
    from gagar_site import ops

    probe = ops.probe_broker()
    if not probe.ok:
        print(f"broker: {probe.detail}", file=sys.stderr)
        return 1
    return 0


def main(argv: list[str]) -> int:
    if argv[:1] == ["web"]:
        return check_web()
    if argv[:1] == ["worker"] and len(argv) == 2:
        return check_worker(argv[1])
    if argv[:1] == ["broker"]:
        return check_broker()
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
