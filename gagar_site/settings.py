"""The one settings file. Everything that differs between machines comes from the environment.

Defaults give a working single-machine setup: a SQLite file and a filesystem Celery broker, so a
real worker process runs without any server installed.
"""

import ipaddress
import re
from pathlib import Path

import dj_database_url
import django_stubs_ext
from django.utils.csp import CSP

from gagar_site.env import (
    ImproperlyConfiguredEnv,
    env_bool,
    env_float,
    env_int,
    env_list,
    env_str,
)
from gagar_site.logging import logging_config

# Lets `ModelAdmin[Model]` and friends be subscripted at runtime, as the type stubs describe.
django_stubs_ext.monkeypatch()

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = Path(env_str("GAGAR_VAR_DIR", str(BASE_DIR / "var")))

DEBUG = env_bool("DEBUG", False)
_secret = env_str("SECRET_KEY", "")
if not _secret:
    if not DEBUG:
        raise ImproperlyConfiguredEnv(
            "SECRET_KEY is not set and DEBUG is off: set SECRET_KEY (or SECRET_KEY_FILE) to a "
            "long random string, or DEBUG=1 on a local try-out (as ./dev up does)"
        )
    _secret = "insecure-dev-only-key-never-used-with-debug-off"  # noqa: S105
SECRET_KEY = _secret

ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", ["localhost", "127.0.0.1", "[::1]", "testserver"])
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", [])

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "grading",
    "review",
    # Site wiring that needs the app registry (login throttling, deploy checks); see the
    # DEPLOYMENT block at the end.
    "gagar_site.apps.SiteConfig",
]

MIDDLEWARE = [
    # Outermost: request id and one access-log line per request (gagar_site/logging.py).
    "gagar_site.logging.RequestLogMiddleware",
    # HTTP latency by view for /metrics (gagar_site/metrics.py).
    "gagar_site.metrics.MetricsMiddleware",
    # gzip for GET pages (the review page shrinks tenfold); BREACH: gagar_site/compression.py.
    "gagar_site.compression.CompressionMiddleware",
    "django.middleware.security.SecurityMiddleware",
    # Content-Security-Policy header from SECURE_CSP (DEPLOYMENT block).
    "django.middleware.csp.ContentSecurityPolicyMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    # Refuses logins for a username+address with too many recent failures (needs resolver_match).
    "gagar_site.login_throttle.LoginThrottleMiddleware",
    # Innermost: control, bidi and zero-width characters in any HTML page's text shown as marks.
    "gagar_site.inert_text.InertTextMiddleware",
]

ROOT_URLCONF = "gagar_site.urls"
WSGI_APPLICATION = "gagar_site.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                # `csp_nonce` for the admin's inline <style>/<script> (SECURE_CSP uses NONCE).
                "django.template.context_processors.csp",
            ],
        },
    },
]

DATABASES = {
    "default": dj_database_url.parse(
        env_str("DATABASE_URL", f"sqlite:///{VAR_DIR / 'gagar.sqlite3'}"),
        conn_max_age=env_int("DATABASE_CONN_MAX_AGE", 0),
        # A kept connection is checked before each request reuses it: after a database restart
        # the first request reconnects instead of failing (tests/faults/test_postgres_restart.py).
        conn_health_checks=True,
    )
}
# A connection pool per process (Django's psycopg pool): GAGAR_DB_POOL_MAX > 0 bounds the
# connections a process holds however many threads use it. A `grading` worker on a threads pool
# sets it (docs/deployment.md): its runs hand their connection back between database steps.
# 0 (the default) keeps one connection per thread, as before.
GAGAR_DB_POOL_MAX = env_int("GAGAR_DB_POOL_MAX", 0)
if GAGAR_DB_POOL_MAX > 0:
    if DATABASES["default"]["ENGINE"] != "django.db.backends.postgresql":
        raise ImproperlyConfiguredEnv("GAGAR_DB_POOL_MAX needs PostgreSQL")
    DATABASES["default"]["CONN_MAX_AGE"] = 0  # pooled connections are never kept per thread
    DATABASES["default"].setdefault("OPTIONS", {})["pool"] = {
        "min_size": 1,
        "max_size": GAGAR_DB_POOL_MAX,
        # A run waits this long for a free connection before its step fails.
        "timeout": 120,
    }
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # WAL lets the web process read while a worker writes; the timeout rides out short locks.
    DATABASES["default"]["OPTIONS"] = {
        "timeout": 20,
        "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
        "transaction_mode": "IMMEDIATE",
    }
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = False
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = VAR_DIR / "staticfiles"
LOGIN_URL = "/accounts/login/"
LOGIN_REDIRECT_URL = "/"

# --- Celery ---------------------------------------------------------------------------------
# The filesystem transport needs no server: the quick start still runs a real worker process.
_BROKER_DIR = VAR_DIR / "broker"
CELERY_BROKER_URL = env_str("CELERY_BROKER_URL", "filesystem://")
CELERY_BROKER_TRANSPORT_OPTIONS: dict[str, object] = {}
if CELERY_BROKER_URL.startswith("filesystem://"):
    if CELERY_BROKER_URL in ("filesystem://", "filesystem:///"):
        # The transport ignores the host, but without one kombu logs "No hostname was supplied.
        # Reverting to default 'localhost'" on every connection (the quick start's output).
        CELERY_BROKER_URL = "filesystem://localhost/"
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        "data_folder_in": str(_BROKER_DIR / "queue"),
        "data_folder_out": str(_BROKER_DIR / "queue"),
        "control_folder": str(_BROKER_DIR / "control"),
        "processed_folder": str(_BROKER_DIR / "processed"),
        "store_processed": False,
    }
    # kombu's filesystem transport does not create its folders.
    for _sub in ("queue", "control", "processed"):
        (_BROKER_DIR / _sub).mkdir(parents=True, exist_ok=True)
else:
    # Longer than any task's hard time limit, so a slow run is never redelivered while alive.
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        "visibility_timeout": env_int("CELERY_VISIBILITY_TIMEOUT", 4 * 3600),
        # A dead worker's unacked messages come back after the visibility timeout, found by a
        # sweep every interval × throttle seconds (kombu's defaults: 10 × 10).
        "unacked_restore_interval": env_int("CELERY_UNACKED_RESTORE_INTERVAL_S", 10),
        "unacked_restore_throttle": env_int("CELERY_UNACKED_RESTORE_THROTTLE", 10),
        # A worker killed during a sweep leaves the sweep's lock behind: no message comes back
        # until it expires (kombu's default 300 s). A sweep takes milliseconds.
        "unacked_mutex_expire": env_int("CELERY_UNACKED_MUTEX_EXPIRE_S", 60),
    }
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_IGNORE_RESULT = True
CELERY_RESULT_BACKEND = None
CELERY_TASK_DEFAULT_QUEUE = "default"
CELERY_TASK_ROUTES = {"grading.run_grader": {"queue": "grading"}}
CELERY_TASK_ALWAYS_EAGER = env_bool("CELERY_TASK_ALWAYS_EAGER", False)
CELERY_WORKER_HIJACK_ROOT_LOGGER = False

# The grader endpoint. The default configuration (grading.services.grader_runs) is named by
# BACKEND / BASE_URL / MODEL: heuristic when all are empty, BASE_URL alone means an
# OpenAI-compatible server whose model is discovered. The API key is never stored in the
# database; every configuration uses this one. TRANSCRIPT: a recorded run for "scripted".
GAGAR_GRADER_BACKEND = env_str("GAGAR_GRADER_BACKEND", "").strip().lower()
GAGAR_GRADER_BASE_URL = env_str("GAGAR_GRADER_BASE_URL", "").strip()
GAGAR_GRADER_MODEL = env_str("GAGAR_GRADER_MODEL", "").strip()
GAGAR_GRADER_API_KEY = env_str("GAGAR_GRADER_API_KEY", "")
GAGAR_GRADER_TRANSCRIPT = env_str("GAGAR_GRADER_TRANSCRIPT", "")
# Per HTTP request to the endpoint, and the backend's own retries of one request.
GAGAR_GRADER_TIMEOUT_S = env_float("GAGAR_GRADER_TIMEOUT_S", 120.0)
GAGAR_GRADER_MAX_RETRIES = env_int("GAGAR_GRADER_MAX_RETRIES", 3)

# Grader runs (grading.tasks). The backend is chosen per GraderConfig.
# A run gives up at its soft limit; the hard limit must stay below the visibility timeout, or Redis
# would hand a live run to a second worker.
GAGAR_GRADER_SOFT_TIME_LIMIT_S = env_int("GAGAR_GRADER_SOFT_TIME_LIMIT_S", 3600)
GAGAR_GRADER_TIME_LIMIT_S = env_int(
    "GAGAR_GRADER_TIME_LIMIT_S", GAGAR_GRADER_SOFT_TIME_LIMIT_S + 300
)
# Celery-level retries of a whole run after transient backend errors (429, 5xx, timeouts).
GAGAR_GRADER_TASK_MAX_RETRIES = env_int("GAGAR_GRADER_TASK_MAX_RETRIES", 5)
GAGAR_GRADER_RETRY_BACKOFF_S = env_int("GAGAR_GRADER_RETRY_BACKOFF_S", 30)
# A running run beats every HEARTBEAT_S; one silent for STALE_AFTER_S may be claimed again.
GAGAR_GRADER_HEARTBEAT_S = env_float("GAGAR_GRADER_HEARTBEAT_S", 30.0)
GAGAR_GRADER_STALE_AFTER_S = env_float("GAGAR_GRADER_STALE_AFTER_S", 300.0)
# Pending runs whose message may have been lost are re-sent at most this often.
GAGAR_GRADER_PENDING_RESEND_S = env_float("GAGAR_GRADER_PENDING_RESEND_S", 3600.0)
GAGAR_GRADER_MAX_DELIVERIES = env_int("GAGAR_GRADER_MAX_DELIVERIES", 10)
GAGAR_GRADER_REAP_EVERY_S = env_float("GAGAR_GRADER_REAP_EVERY_S", 60.0)
# "local" (default: the local sandbox when this machine supports it), "docker" or "none".
GAGAR_SANDBOX = env_str("GAGAR_SANDBOX", "local")
# The image checks run in with GAGAR_SANDBOX=docker; it must hold the repositories' toolchains.
GAGAR_SANDBOX_IMAGE = env_str("GAGAR_SANDBOX_IMAGE", "gagar-sandbox:local")
# What a docker sandbox image holds, told to the grader in the run_check spec ("Python 3.11 with
# the repository's test dependencies", …). A task may name its own image in its metadata
# (`sandbox_image`), or GAGAR_SANDBOX_TASK_IMAGE gives a template with {task} (the task id).
GAGAR_SANDBOX_IMAGE_CONTENTS = env_str("GAGAR_SANDBOX_IMAGE_CONTENTS", "")
GAGAR_SANDBOX_TASK_IMAGE = env_str("GAGAR_SANDBOX_TASK_IMAGE", "")
# Prices in USD per million tokens, to record a run's cost; unset means unknown. Cached input
# (prompt-cache hits) defaults to the input price. A configuration's own prices win.
GAGAR_GRADER_USD_PER_MTOK_IN = env_float("GAGAR_GRADER_USD_PER_MTOK_IN", 0.0)
GAGAR_GRADER_USD_PER_MTOK_CACHED_IN = env_float(
    "GAGAR_GRADER_USD_PER_MTOK_CACHED_IN", GAGAR_GRADER_USD_PER_MTOK_IN
)
GAGAR_GRADER_USD_PER_MTOK_OUT = env_float("GAGAR_GRADER_USD_PER_MTOK_OUT", 0.0)
# Defaults of the default configuration's backend options (a configuration's `options` win).
# Streaming answers time out after IDLE_TIMEOUT_S without a byte, however long they take.
GAGAR_GRADER_STREAM = env_bool("GAGAR_GRADER_STREAM", True)
GAGAR_GRADER_IDLE_TIMEOUT_S = env_float("GAGAR_GRADER_IDLE_TIMEOUT_S", 120.0)
# An OpenAI reasoning model: max_completion_tokens, no temperature, optional reasoning_effort.
GAGAR_GRADER_REASONING = env_bool("GAGAR_GRADER_REASONING", False)
GAGAR_GRADER_REASONING_EFFORT = env_str("GAGAR_GRADER_REASONING_EFFORT", "")
# Anthropic extended thinking: the thinking budget in tokens (0 = off).
GAGAR_GRADER_THINKING_BUDGET = env_int("GAGAR_GRADER_THINKING_BUDGET", 0)
# The model's context window when the server does not say (0 = ask the server, else 128k).
GAGAR_GRADER_CONTEXT_WINDOW = env_int("GAGAR_GRADER_CONTEXT_WINDOW", 0)
# The grader gate (issue 13): the figures a configuration must reach against the reviewers'
# consensus, on a gold campaign it was not fitted on, to be approved for training (`manage.py
# grader_eval --approve`). Per deployment; the defaults are the κ and T3-recall targets
# and a concordance above the "smaller diff" baseline's 0.84.
GAGAR_GATE_MIN_KAPPA = env_float("GAGAR_GATE_MIN_KAPPA", 0.65)
GAGAR_GATE_MIN_CONCORDANCE = env_float("GAGAR_GATE_MIN_CONCORDANCE", 0.85)
GAGAR_GATE_MIN_T3_RECALL = env_float("GAGAR_GATE_MIN_T3_RECALL", 0.70)
# On: the training API refuses configurations not approved for training (compose.yaml turns it
# on). Off or on, every answer says which configuration graded each group and its approval.
GAGAR_REQUIRE_APPROVED_GRADER = env_bool("GAGAR_REQUIRE_APPROVED_GRADER", False)
_visibility = CELERY_BROKER_TRANSPORT_OPTIONS.get("visibility_timeout")
if isinstance(_visibility, int) and _visibility <= GAGAR_GRADER_TIME_LIMIT_S:
    raise ImproperlyConfiguredEnv(
        f"GAGAR_GRADER_TIME_LIMIT_S ({GAGAR_GRADER_TIME_LIMIT_S}) must be below "
        f"CELERY_VISIBILITY_TIMEOUT ({_visibility})"
    )
GAGAR_DASHBOARD_REFRESH_S = env_float("GAGAR_DASHBOARD_REFRESH_S", 600.0)
CELERY_BEAT_SCHEDULE = {
    "grading.reap_stuck_runs": {
        "task": "grading.reap_stuck_runs",
        "schedule": GAGAR_GRADER_REAP_EVERY_S,
    },
    # Keeps the default and recently viewed dashboards computed on current data.
    "review.refresh_snapshots": {
        "task": "review.refresh_snapshots",
        "schedule": GAGAR_DASHBOARD_REFRESH_S,
    },
}

# --- REST API ---------------------------------------------------------------------------------
REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "grading.api.auth.HashedTokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    # A token or a staff session; a reviewer's session is refused (grading/api/permissions.py).
    "DEFAULT_PERMISSION_CLASSES": ["grading.api.permissions.IsApiClientOrStaff"],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "DEFAULT_PARSER_CLASSES": ["rest_framework.parsers.JSONParser"],
    # JSON only outside debug: the browsable API's inline scripts would break the CSP, and a
    # training loop never needs HTML.
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"]
    + (["rest_framework.renderers.BrowsableAPIRenderer"] if DEBUG else []),
    # Every error is an RFC 9457 problem (grading/api/problems.py).
    "EXCEPTION_HANDLER": "grading.api.problems.problem_exception_handler",
    "DEFAULT_THROTTLE_CLASSES": ["grading.api.throttles.TokenRateThrottle"],
}
# Requests per token (or staff account): "<n>/<second|minute|hour|day>", empty = unlimited.
# Over it the API answers 429 with Retry-After; the Python client waits that long and retries.
GAGAR_API_RATE = env_str("GAGAR_API_RATE", "600/minute").strip()
if GAGAR_API_RATE and not re.fullmatch(
    r"[1-9]\d*/(s|sec|second|m|min|minute|h|hour|d|day)", GAGAR_API_RATE
):
    raise ImproperlyConfiguredEnv(
        f"GAGAR_API_RATE={GAGAR_API_RATE!r}: use <n>/second, /minute, /hour or /day (or empty)"
    )
# Largest page of the paginated lists (runs, steps, labels).
GAGAR_API_MAX_PAGE_SIZE = env_int("GAGAR_API_MAX_PAGE_SIZE", 1000)
SPECTACULAR_SETTINGS = {
    "TITLE": "GAGAR Review API",
    "DESCRIPTION": "Send rollout groups from a training loop; take back grades and advantages, "
    "grader runs and verdicts, calibrated labels and exports. Errors are RFC 9457 problem "
    "details. Authentication: `Authorization: Bearer <token>` (scopes submit, read, export).",
    "VERSION": "1",
    "SERVE_INCLUDE_SCHEMA": False,
    # Swagger UI and Redoc from the drf-spectacular-sidecar package: served from our own origin,
    # since the CSP allows no CDN.
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    "COMPONENT_SPLIT_REQUEST": True,
    "ENUM_NAME_OVERRIDES": {
        "GroupStatusEnum": ["graded", "pending", "fallback", "failed"],
        "AttemptStatusEnum": ["valid", "infra_failed", "exploit_confirmed"],
        "GraderRunStatusEnum": "grading.models.GraderRun.Status",
    },
}

# --- GAGAR ------------------------------------------------------------------------------------
GAGAR_MAX_UPLOAD_BYTES = env_int("GAGAR_MAX_UPLOAD_BYTES", 512 * 1024 * 1024)
# One JSON line (of a bundle, a SWE-bench or a reviews file) is parsed in memory; larger
# trajectories go in sidecar files.
GAGAR_MAX_LINE_BYTES = env_int("GAGAR_MAX_LINE_BYTES", 64 * 1024 * 1024)
# An import file that is one JSON document (an indented report, a predictions array) is read
# whole (about three times its size in memory at the peak); over this it is refused unread
# (JSON Lines has no such limit, only the line's).
GAGAR_MAX_DOCUMENT_BYTES = env_int("GAGAR_MAX_DOCUMENT_BYTES", 256 * 1024 * 1024)
# Test output over this (a run folder's test_output.txt, a bundle's test_output) is kept as its
# start and end (the last three quarters of the budget: failures and pytest's summary come
# last) with a line saying how many bytes were dropped; a file's import says so in a note. The
# same output imported again under a larger limit is rewritten in place ("completed").
GAGAR_MAX_TEST_OUTPUT_BYTES = env_int("GAGAR_MAX_TEST_OUTPUT_BYTES", 16 * 1024 * 1024)
if GAGAR_MAX_TEST_OUTPUT_BYTES < 1:
    raise ImproperlyConfiguredEnv(
        f"GAGAR_MAX_TEST_OUTPUT_BYTES={GAGAR_MAX_TEST_OUTPUT_BYTES}: must be at least 1"
    )
# A patch over this is refused at import: a 50 MiB patch took 870 MB to import and seconds on
# every review-page load, and no reviewer can judge it.
GAGAR_MAX_PATCH_BYTES = env_int("GAGAR_MAX_PATCH_BYTES", 5 * 1024 * 1024)
GAGAR_REPO_DIR = VAR_DIR / "repos"
# Folders of local clones or bare mirrors (comma-separated), where a task whose repo is
# owner/name finds its source as owner/name, owner__name or name: no network, only read.
GAGAR_REPO_MIRRORS = [Path(p) for p in env_list("GAGAR_REPO_MIRRORS", [])]

DATA_UPLOAD_MAX_MEMORY_SIZE = GAGAR_MAX_UPLOAD_BYTES

# Review timing (review/services/timing.py): a reviewer idle this long stops the clock; the page
# reports activity every HEARTBEAT_MS.
GAGAR_REVIEW_IDLE_SECONDS = env_int("GAGAR_REVIEW_IDLE_SECONDS", 60)
GAGAR_REVIEW_HEARTBEAT_MS = env_int("GAGAR_REVIEW_HEARTBEAT_MS", 10_000)
# Extra regular expressions (comma-separated) for agent fingerprints that blinding redacts, on
# top of the built-in ones (review/blinded_cache.py, review/analytics/package.py).
GAGAR_REVIEW_FINGERPRINTS = env_list("GAGAR_REVIEW_FINGERPRINTS", [])

# === DEPLOYMENT: security, HTTPS, cache, logging ===============================================
# The database password can come apart from DATABASE_URL, e.g. as a container secret
# (DATABASE_PASSWORD_FILE=/run/secrets/db_password); it overrides the URL's password.
_db_password = env_str("DATABASE_PASSWORD", "")
if _db_password:
    DATABASES["default"]["PASSWORD"] = _db_password
# Production sets GAGAR_HTTPS=1 (the site is served over HTTPS, usually behind a proxy that
# terminates TLS). It turns on the redirect, HSTS and secure cookies; without it the same
# settings serve plain HTTP, which tests and the local live server need even with DEBUG off.
GAGAR_HTTPS = env_bool("GAGAR_HTTPS", False)
# Only behind a proxy that always sets X-Forwarded-Proto itself (never trust a client's).
if env_bool("SECURE_PROXY_SSL_HEADER", False):
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", GAGAR_HTTPS)
# Probes talk to gunicorn directly over HTTP (compose health checks, load balancers).
SECURE_REDIRECT_EXEMPT = [r"^healthz$", r"^readyz$", r"^metrics$"]
SECURE_HSTS_SECONDS = env_int("SECURE_HSTS_SECONDS", 365 * 24 * 3600 if GAGAR_HTTPS else 0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("SECURE_HSTS_INCLUDE_SUBDOMAINS", True)
# Sends the preload flag only; getting on browsers' preload list is a separate manual submission.
SECURE_HSTS_PRELOAD = env_bool("SECURE_HSTS_PRELOAD", True)
SESSION_COOKIE_SECURE = GAGAR_HTTPS
CSRF_COOKIE_SECURE = GAGAR_HTTPS
SESSION_COOKIE_HTTPONLY = True
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
X_FRAME_OPTIONS = "DENY"
# Everything from our own origin. Scripts: files only, or an inline block carrying the request's
# nonce; never 'unsafe-inline'. Styles: the admin's few inline <style> blocks carry the nonce
# (Django 6 admin templates use {% csp_nonce_attr %}); `style="…"` attributes are not allowed.
# The admin's icons are SVG files in static/, data: images cover CSS-embedded ones.
SECURE_CSP = {
    "default-src": [CSP.SELF],
    "script-src": [CSP.SELF, CSP.NONCE],
    "style-src": [CSP.SELF, CSP.NONCE],
    "img-src": [CSP.SELF, "data:"],
    "object-src": [CSP.NONE],
    "base-uri": [CSP.SELF],
    "form-action": [CSP.SELF],
    "frame-ancestors": [CSP.NONE],
}
# Where `manage.py collectstatic` writes; the image collects at build time into /app/static-root,
# outside GAGAR_VAR_DIR (a volume would hide it).
STATIC_ROOT = Path(env_str("STATIC_ROOT", str(STATIC_ROOT)))

# Cache: login rate limiting counts failures here, so every web process must share it in
# production. CACHE_URL (or REDIS_URL) = redis://host:6379/1; default is per-process memory.
_cache_url = env_str("CACHE_URL", "") or env_str("REDIS_URL", "")
if _cache_url.startswith(("redis://", "rediss://", "unix://")):
    CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": _cache_url,
            "KEY_PREFIX": "gagar",
            "TIMEOUT": 300,
            "OPTIONS": {"socket_timeout": 2.0, "socket_connect_timeout": 2.0},
        }
    }
elif _cache_url in ("", "locmem://"):
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}
else:
    raise ImproperlyConfiguredEnv(f"CACHE_URL={_cache_url!r}: use redis://… or locmem://")

# Login rate limiting (gagar_site/login_throttle.py): MAX failures per username + client address
# within WINDOW seconds lock that pair until the window ends. PROXY_COUNT = how many trusted
# proxies append to X-Forwarded-For in front of gunicorn (0: use the socket's address).
GAGAR_LOGIN_MAX_FAILURES = env_int("GAGAR_LOGIN_MAX_FAILURES", 10)
GAGAR_LOGIN_WINDOW_S = env_int("GAGAR_LOGIN_WINDOW_S", 15 * 60)
GAGAR_PROXY_COUNT = env_int("GAGAR_PROXY_COUNT", 0)

# Prometheus metrics at /metrics (gagar_site/metrics.py): answered for clients in
# GAGAR_METRICS_ALLOW (comma-separated addresses or networks; default loopback only) or, when
# GAGAR_METRICS_TOKEN is set, for any client sending `Authorization: Bearer <token>`.
GAGAR_METRICS_TOKEN = env_str("GAGAR_METRICS_TOKEN", "")
try:
    GAGAR_METRICS_ALLOW = [
        ipaddress.ip_network(n.strip(), strict=False)
        for n in env_list("GAGAR_METRICS_ALLOW", ["127.0.0.0/8", "::1/128"])
        if n.strip()
    ]
except ValueError as _exc:
    raise ImproperlyConfiguredEnv(f"GAGAR_METRICS_ALLOW: {_exc}") from _exc

# Logs go to stderr; LOG_FORMAT=json writes one JSON object per line (gagar_site/logging.py).
LOGGING = logging_config(
    log_format=env_str("LOG_FORMAT", "plain").strip().lower(),
    level=env_str("LOG_LEVEL", "INFO"),
)
# === end DEPLOYMENT ==============================================================================
