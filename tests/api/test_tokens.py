"""Tokens belong to staff and service accounts only, carry scopes, and are made the same way by
the command and the admin, which shows the secret once."""

from __future__ import annotations

import re

import pytest
from django.contrib.auth.models import User
from django.core.management import CommandError, call_command
from rest_framework.test import APIClient

from grading.models import ApiToken
from grading.services.tokens import api_token_create, service_account_create
from review.models import Campaign
from tests.factories import ServiceAccountFactory, StaffFactory, UserFactory

pytestmark = pytest.mark.django_db


def bearer(secret: str) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {secret}")
    return client


def test_a_reviewer_can_hold_no_token_by_any_route(client):
    rita = UserFactory.create(username="rita")
    with pytest.raises(ValueError, match="reviewer account never does"):
        api_token_create(user=rita, name="x", scopes=["submit"])
    with pytest.raises(CommandError, match="reviewer account never does"):
        call_command("create_api_token", "rita")
    with pytest.raises(CommandError, match="has a password"):
        call_command("create_api_token", "rita", "--service-account")
    client.force_login(StaffFactory.create(username="root", is_superuser=True))
    page = client.post(
        "/admin/grading/apitoken/add/", {"user": rita.pk, "name": "x", "scopes": ["read"]}
    )
    assert page.status_code == 200 and "reviewer account never does" in page.content.decode()
    assert not ApiToken.objects.exists()


def test_a_service_account_that_becomes_a_reviewer_loses_its_tokens():
    svc = ServiceAccountFactory.create(username="loop")
    _, secret = api_token_create(user=svc, name="loop", scopes=["read"])
    assert bearer(secret).get("/api/v1/runs").status_code == 200
    # Added as a reviewer behind the service's back (the admin's campaign page could).
    Campaign.objects.create(name="c").reviewers.add(svc)
    response = bearer(secret).get("/api/v1/runs")
    assert response.status_code == 403 and "campaign reviewer" in response.json()["detail"]


def test_staff_who_lose_staff_status_lose_their_tokens():
    lead = StaffFactory.create(username="lead")
    _, secret = api_token_create(user=lead, name="lead", scopes=["read", "export"])
    assert bearer(secret).get("/api/v1/labels").status_code == 200
    User.objects.filter(pk=lead.pk).update(is_staff=False)
    assert bearer(secret).get("/api/v1/labels").status_code == 403


def test_the_command_makes_service_accounts_and_scoped_tokens(capsys):
    call_command(
        "create_api_token", "ci-loop", "--service-account", "--scope", "submit", "--scope", "export"
    )
    secret = capsys.readouterr().out.strip()
    token = ApiToken.objects.get()
    assert token.scopes == ["submit", "export"] and not token.user.has_usable_password()
    assert bearer(secret).get("/api/v1/exports/labels?format=jsonl").status_code == 200
    assert bearer(secret).get("/api/v1/runs").status_code == 403  # no read scope


def test_the_admin_creates_a_working_token_and_shows_the_secret_once(client):
    svc = service_account_create(username="pipeline")
    client.force_login(StaffFactory.create(username="root", is_superuser=True))
    form = client.get("/admin/grading/apitoken/add/")
    assert form.status_code == 200 and 'name="scopes"' in form.content.decode()
    page = client.post(
        "/admin/grading/apitoken/add/",
        {"user": svc.pk, "name": "nightly export", "scopes": ["read", "export"]},
    )
    assert page.status_code == 200 and "no-store" in page["Cache-Control"]
    secret = re.search(r'id="api-token-secret">(gagar_[\w-]+)<', page.content.decode()).group(1)
    token = ApiToken.objects.get()
    assert token.scopes == ["read", "export"] and token.user == svc
    assert secret.startswith(token.prefix) and secret not in (token.key_hash, token.name)
    assert bearer(secret).get("/api/v1/runs").status_code == 200
    # Never again: not on the change page, not in the list.
    for url in ("/admin/grading/apitoken/", f"/admin/grading/apitoken/{token.pk}/change/"):
        text = client.get(url).content.decode()
        assert secret not in text and token.key_hash not in text


def test_the_admin_revokes_tokens(client):
    svc = service_account_create(username="pipeline")
    token, secret = api_token_create(user=svc, name="t", scopes=["read"])
    client.force_login(StaffFactory.create(username="root", is_superuser=True))
    client.post(
        "/admin/grading/apitoken/",
        {"action": "revoke", "_selected_action": [token.pk]},
    )
    token.refresh_from_db()
    assert token.revoked_at is not None
    assert bearer(secret).get("/api/v1/runs").status_code == 401


def test_scopes_are_checked_when_a_token_is_made():
    svc = ServiceAccountFactory.create()
    with pytest.raises(ValueError, match="unknown scope"):
        api_token_create(user=svc, name="x", scopes=["admin"])
    with pytest.raises(ValueError, match="at least one scope"):
        api_token_create(user=svc, name="x", scopes=[])
