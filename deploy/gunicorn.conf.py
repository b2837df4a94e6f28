"""gunicorn settings for the web service (`gunicorn -c deploy/gunicorn.conf.py gagar_site.wsgi`).

Every value can be overridden from the environment so one image fits machines of any size.
"""

import os
from pathlib import Path

bind = os.environ.get("GUNICORN_BIND", "0.0.0.0:8000")
# Threads suit this workload: requests wait on PostgreSQL, not on the CPU.
workers = int(os.environ.get("GUNICORN_WORKERS", "2"))
threads = int(os.environ.get("GUNICORN_THREADS", "4"))
worker_class = "gthread"
# Bundle uploads can be large; a slow client must not be cut off mid-upload by a short timeout.
timeout = int(os.environ.get("GUNICORN_TIMEOUT", "120"))
graceful_timeout = int(os.environ.get("GUNICORN_GRACEFUL_TIMEOUT", "30"))
keepalive = 5
# Recycle workers now and then so a slow leak cannot grow without bound.
max_requests = int(os.environ.get("GUNICORN_MAX_REQUESTS", "2000"))
max_requests_jitter = 200
# Heartbeat files in memory (a private tmpfs in containers), not on a slow overlay filesystem.
worker_tmp_dir = "/dev/shm" if Path("/dev/shm").is_dir() else None  # noqa: S108
# Django's RequestLogMiddleware writes the access log (with request ids); gunicorn's own
# access log would duplicate it.
accesslog = None
errorlog = "-"
loglevel = os.environ.get("GUNICORN_LOG_LEVEL", "info")
# The proxy in front sets X-Forwarded-*; gunicorn passes them through, Django decides what to
# trust (SECURE_PROXY_SSL_HEADER, GAGAR_PROXY_COUNT).
forwarded_allow_ips = os.environ.get("GUNICORN_FORWARDED_ALLOW_IPS", "127.0.0.1")
