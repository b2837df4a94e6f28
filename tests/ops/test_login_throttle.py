from __future__ import annotations

import time

import pytest
from django.core.cache import cache

from gagar_site import login_throttle

PASSWORD = "pw-for-tests-only"  # tests.factories.UserFactory's


def _login(client, username: str, password: str, ip: str = "10.0.0.1", path="/accounts/login/"):
    return client.post(path, {"username": username, "password": password}, REMOTE_ADDR=ip)


def _fail(client, username: str, times: int, ip: str = "10.0.0.1") -> None:
    for _ in range(times):
        response = _login(client, username, "wrong", ip)
        assert response.status_code == 200  # the form again, with its error


@pytest.mark.django_db
def test_it_refuses_the_eleventh_attempt_even_with_the_right_password(client, reviewer):
    _fail(client, "rita", 10)
    response = _login(client, "rita", PASSWORD)
    assert response.status_code == 429
    assert b"Too many failed logins" in response.content
    assert int(response["Retry-After"]) == 15 * 60
    assert "_auth_user_id" not in client.session


@pytest.mark.django_db
def test_it_still_lets_the_tenth_attempt_through(client, reviewer):
    _fail(client, "rita", 9)
    response = _login(client, "rita", PASSWORD)
    assert response.status_code == 302
    assert client.session["_auth_user_id"] == str(reviewer.pk)


@pytest.mark.django_db
def test_a_success_resets_the_count(client, reviewer):
    _fail(client, "rita", 9)
    assert _login(client, "rita", PASSWORD).status_code == 302
    client.logout()
    _fail(client, "rita", 9)
    assert _login(client, "rita", PASSWORD).status_code == 302


@pytest.mark.django_db
def test_another_address_or_username_is_unaffected(client, reviewer, staff):
    _fail(client, "rita", 10)
    assert _login(client, "rita", "wrong").status_code == 429
    # Same username from elsewhere: still allowed.
    assert _login(client, "rita", PASSWORD, ip="10.0.0.2").status_code == 302
    client.logout()
    # Another username from the locked address: still allowed.
    assert _login(client, "sam", PASSWORD).status_code == 302


@pytest.mark.django_db
def test_the_username_is_matched_case_insensitively(client, reviewer):
    _fail(client, "RITA", 10)
    assert _login(client, "rita", PASSWORD).status_code == 429


@pytest.mark.django_db
def test_the_lock_ends_with_the_window(client, reviewer):
    _fail(client, "rita", 10)
    assert _login(client, "rita", PASSWORD).status_code == 429
    # Let the window run out for real (memory cache and Redis alike): one second left.
    cache.touch(login_throttle._key("rita", "10.0.0.1"), 1)
    time.sleep(1.2)
    assert _login(client, "rita", PASSWORD).status_code == 302


@pytest.mark.django_db
def test_the_admin_login_is_limited_too(client, staff):
    _fail_admin = [
        _login(client, "sam", "wrong", path="/admin/login/").status_code for _ in range(10)
    ]
    assert set(_fail_admin) == {200}
    assert _login(client, "sam", PASSWORD, path="/admin/login/").status_code == 429


@pytest.mark.django_db
def test_a_page_view_of_the_login_form_is_never_refused(client, reviewer):
    _fail(client, "rita", 10)
    assert client.get("/accounts/login/").status_code == 200


def test_it_takes_the_client_address_from_the_trusted_proxy_hop(rf, settings):
    settings.GAGAR_PROXY_COUNT = 1
    request = rf.get("/", HTTP_X_FORWARDED_FOR="6.6.6.6, 203.0.113.9", REMOTE_ADDR="172.18.0.5")
    # The left entry is whatever the client claimed; the proxy appended the real address.
    assert login_throttle.client_ip(request) == "203.0.113.9"
    settings.GAGAR_PROXY_COUNT = 0
    assert login_throttle.client_ip(request) == "172.18.0.5"
