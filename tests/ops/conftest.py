from __future__ import annotations

import socket

import pytest

from tests.factories import StaffFactory, UserFactory


@pytest.fixture(autouse=True)
def _fast_password_hasher(settings):
    # The throttle tests log in dozens of times; PBKDF2's cost is not what they test.
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture
def reviewer(db):
    return UserFactory(username="rita")


@pytest.fixture
def staff(db):
    return StaffFactory(username="sam")


@pytest.fixture
def closed_port() -> int:
    """A local TCP port nothing listens on (bound, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])
