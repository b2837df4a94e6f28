from __future__ import annotations

import os
import re
import secrets
import subprocess
import sys

import pytest
from django.conf import settings as django_settings

from tests.conftest import PROJECT_ROOT
from tests.factories import StaffFactory

PRODUCTION_ENV = {
    "DEBUG": "0",
    "GAGAR_HTTPS": "1",
    "ALLOWED_HOSTS": "review.example.com",
    "CSRF_TRUSTED_ORIGINS": "https://review.example.com",
    "CACHE_URL": "redis://127.0.0.1:6379/1",
}


def _manage(*args: str, env: dict[str, str], tmp_path) -> subprocess.CompletedProcess[str]:
    full_env = {
        key: value
        for key, value in os.environ.items()
        # Start from a clean slate: no test-only overrides leak into "production".
        if key
        not in {
            "DEBUG",
            "SECRET_KEY",
            "CACHE_URL",
            "REDIS_URL",
            "GAGAR_HTTPS",
            "DJANGO_ALLOW_ASYNC_UNSAFE",
        }
    }
    full_env.update(env, GAGAR_VAR_DIR=str(tmp_path))
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=PROJECT_ROOT,
        env=full_env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_check_deploy_is_clean_under_production_settings(tmp_path):
    env = {**PRODUCTION_ENV, "SECRET_KEY": secrets.token_urlsafe(50)}
    result = _manage("check", "--deploy", "--fail-level", "WARNING", env=env, tmp_path=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "no issues" in result.stdout


def test_without_debug_or_a_secret_key_manage_py_says_what_to_set_in_one_line(tmp_path):
    result = _manage("import", "bundle", "step.jsonl", env={}, tmp_path=tmp_path)
    assert result.returncode != 0
    assert "Traceback" not in result.stderr, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert "SECRET_KEY" in lines[0] and "DEBUG=1" in lines[0], lines[0]
    # A bad value is named the same way.
    bad = _manage("check", env={"DEBUG": "maybe"}, tmp_path=tmp_path)
    assert bad.returncode != 0 and bad.stderr.strip().splitlines() == [
        "manage.py: DEBUG='maybe' is not a boolean (use 1/0, true/false)"
    ], bad.stderr


def test_check_deploy_warns_when_login_counts_are_per_process(tmp_path):
    env = {**PRODUCTION_ENV, "SECRET_KEY": secrets.token_urlsafe(50), "CACHE_URL": ""}
    result = _manage("check", "--deploy", "--fail-level", "WARNING", env=env, tmp_path=tmp_path)
    assert result.returncode != 0
    assert "gagar.W001" in result.stderr


def test_production_settings_turn_on_https_cookies_and_headers(tmp_path):
    env = {**PRODUCTION_ENV, "SECRET_KEY": secrets.token_urlsafe(50)}
    names = [
        "SECURE_SSL_REDIRECT",
        "SESSION_COOKIE_SECURE",
        "CSRF_COOKIE_SECURE",
        "SECURE_HSTS_SECONDS",
        "CACHES",
    ]
    code = (
        "from django.conf import settings as s; print("
        + ",".join(f"repr(s.{name})" for name in names)
        + ", sep='|')"
    )
    result = _manage("shell", "-c", code, env=env, tmp_path=tmp_path)
    assert result.returncode == 0, result.stderr
    last_line = result.stdout.strip().splitlines()[-1]
    redirect, session_secure, csrf_secure, hsts, caches = last_line.split("|")
    assert (redirect, session_secure, csrf_secure) == ("True", "True", "True")
    assert int(hsts) >= 31536000
    assert "RedisCache" in caches


def test_tests_run_without_https_so_the_live_server_works():
    assert django_settings.DEBUG is False
    assert django_settings.SECURE_SSL_REDIRECT is False
    assert django_settings.SESSION_COOKIE_SECURE is False


@pytest.mark.django_db
def test_every_page_carries_the_security_headers(client):
    response = client.get("/accounts/login/")
    csp = response["Content-Security-Policy"]
    assert "default-src 'self'" in csp
    assert "unsafe-inline" not in csp
    assert "unsafe-eval" not in csp
    assert "frame-ancestors 'none'" in csp
    assert response["X-Frame-Options"] == "DENY"
    assert response["X-Content-Type-Options"] == "nosniff"
    assert response["Referrer-Policy"] == "same-origin"


def test_the_admin_inline_styles_carry_the_header_nonce(client, db):
    # The admin change list without actions has an inline <style>: it must carry the nonce
    # the header allows, or the browser drops it.
    client.force_login(StaffFactory(username="root", is_superuser=True))
    response = client.get("/admin/auth/group/")
    assert response.status_code == 200
    html = response.content.decode()
    nonces = set(re.findall(r"'nonce-([^']+)'", response["Content-Security-Policy"]))
    used = set(re.findall(r'\snonce="([^"]+)"', html))
    assert used, "the admin page should use the request's nonce"
    assert used <= nonces
    for tag in re.findall(r"<(?:style|script)\b[^>]*>", html):
        if "src=" in tag:
            continue
        match = re.search(r'nonce="([^"]+)"', tag)
        assert match and match.group(1) in nonces, tag


_INLINE_VIOLATIONS = [
    (
        re.compile(
            r"<script\b(?![^>]*\bsrc=)(?![^>]*\bnonce=)(?![^>]*type=\"application/json\")[^>]*>"
        ),
        "inline <script> without a nonce",
    ),
    (re.compile(r"<style\b(?![^>]*\bnonce=)[^>]*>"), "inline <style> without a nonce"),
    (re.compile(r"\sstyle\s*=\s*[\"']"), "style attribute"),
    (re.compile(r"\son[a-z]+\s*=\s*[\"']"), "inline event handler"),
    (re.compile(r"javascript:", re.IGNORECASE), "javascript: URL"),
]


def test_the_project_templates_satisfy_the_policy():
    """The CSP forbids inline script, style attributes and handlers: none may be written."""
    problems = []
    template_dirs = [PROJECT_ROOT / "templates", *PROJECT_ROOT.glob("*/templates")]
    for directory in template_dirs:
        for path in sorted(directory.rglob("*.html")):
            text = path.read_text()
            for pattern, what in _INLINE_VIOLATIONS:
                for match in pattern.finditer(text):
                    line = text.count("\n", 0, match.start()) + 1
                    problems.append(f"{path.relative_to(PROJECT_ROOT)}:{line}: {what}")
    assert problems == []
