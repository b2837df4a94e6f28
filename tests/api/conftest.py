from __future__ import annotations

from collections.abc import Callable

import pytest
from rest_framework.test import APIClient

from grading.services.tokens import api_token_create
from tests.factories import ServiceAccountFactory


@pytest.fixture
def api_for(db: None) -> Callable[..., APIClient]:
    """An APIClient holding a fresh service-account token with the given scopes."""
    counter = iter(range(1000))

    def make(*scopes: str) -> APIClient:
        user = ServiceAccountFactory.create(username=f"svc{next(counter)}")
        _, secret = api_token_create(user=user, name="t", scopes=scopes or ("submit", "read"))
        client = APIClient()
        client.credentials(HTTP_AUTHORIZATION=f"Bearer {secret}")
        return client

    return make


@pytest.fixture
def full(api_for: Callable[..., APIClient]) -> APIClient:
    return api_for("submit", "read", "export")


@pytest.fixture
def token(db: None) -> str:
    user = ServiceAccountFactory.create(username="generated-loop")
    _, secret = api_token_create(user=user, name="t", scopes=("submit", "read"))
    return secret
