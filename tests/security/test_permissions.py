"""Every URL pattern of the project, requested as every role, against an explicit table.

The walk covers whatever `get_resolver()` holds, so a new URL that the table does not classify
fails `test_every_url_pattern_is_in_the_table` until someone decides who may reach it.
Outcomes: a status code, or `login` / `admin-login` for a redirect to that login page.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
from django.contrib import admin
from django.db.models import Model
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver, reverse

from tests.security.permission_table import (
    ADMIN_MODEL_SUFFIXES,
    ADMIN_OVERRIDES,
    ROLES,
    ROUTES,
    Route,
    admin_model_route,
)
from tests.security.world import World, world_build

pytestmark = pytest.mark.django_db


def url_patterns() -> Iterator[str]:
    """Every concrete pattern, as its full route string (`review/a/<int:assignment_id>/`)."""

    def walk(resolver: URLResolver, prefix: str) -> Iterator[str]:
        for entry in resolver.url_patterns:
            if isinstance(entry, URLResolver):
                yield from walk(entry, prefix + str(entry.pattern))
            else:
                assert isinstance(entry, URLPattern)
                yield prefix + str(entry.pattern)

    yield from walk(get_resolver(), "")


def _model_of(route: str) -> type[Model] | None:
    """The registered model behind one of the admin's generated per-model URLs, if it is one."""
    match = re.fullmatch(r"admin/(\w+)/(\w+)/(.*)", route)
    if not match or match.group(3) not in ADMIN_MODEL_SUFFIXES:
        return None
    for model in admin.site._registry:
        if (model._meta.app_label, model._meta.model_name) == match.group(1, 2):
            return model
    return None


def classify(route: str) -> Route | None:
    if route in ROUTES:
        return ROUTES[route]
    model = _model_of(route)
    if model is None:
        return None
    return admin_model_route(model, route, ADMIN_OVERRIDES.get(route, {}))


def test_every_url_pattern_is_in_the_table() -> None:
    unclassified = [route for route in url_patterns() if classify(route) is None]
    assert not unclassified, (
        "URL patterns nobody has classified: add them to tests/security/permission_table.py "
        "with the outcome each role must get:\n  " + "\n  ".join(unclassified)
    )


def test_the_table_names_no_url_that_is_gone() -> None:
    live = set(url_patterns())
    stale = sorted((set(ROUTES) | set(ADMIN_OVERRIDES)) - live)
    assert not stale, f"table rows for URL patterns that no longer exist: {stale}"


def _client(world: World, role: str) -> Client:
    users = {
        "owner": world.owner,
        "other": world.other,
        "fresh": world.fresh,
        "staff": world.staff,
        "superuser": world.superuser,
    }
    if role == "api":
        return Client(HTTP_AUTHORIZATION=f"Bearer {world.api_secret}")
    if role == "submitter":
        return Client(HTTP_AUTHORIZATION=f"Bearer {world.submit_secret}")
    client = Client()
    if role in users:
        client.force_login(users[role])
    return client


def outcome(response: object) -> str:
    status = getattr(response, "status_code", 0)
    if status == 302:
        location = str(response["Location"])  # type: ignore[index]
        if location.startswith("/accounts/login/"):
            return "login"
        if location.startswith("/admin/login/"):
            return "admin-login"
    return str(status)


def _url(route: str, spec: Route, world: World) -> str:
    kwargs = spec.kwargs(world) if spec.kwargs else {}
    path = "/" + route
    for name, value in kwargs.items():
        path = re.sub(rf"<(?:\w+:)?{name}>", str(value), path)
    # The admin's two regex patterns: an app index, and the catch-all behind every other page.
    if path.startswith("/admin/^"):
        return reverse("admin:app_list", kwargs={"app_label": "review"})
    if path.startswith("/admin/(?P<url>"):
        return "/admin/no-such-page/"
    assert "<" not in path, f"{route}: no value for a URL parameter in {path}"
    return path + spec.query


def _request(client: Client, spec: Route, url: str, world: World) -> object:
    headers = {"HTTP_ACCEPT": "application/json"} if spec.json else {}
    if spec.method == "get":
        return client.get(url, **headers)
    if spec.body is not None:
        return client.post(url, spec.body, content_type=spec.content_type, **headers)
    return client.post(url, spec.data(world) if spec.data else {}, **headers)


def test_each_role_gets_exactly_the_outcome_the_table_names(settings) -> None:
    # Faster logins; the hasher is not what this test is about.
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    world = world_build()
    clients = {role: _client(world, role) for role in ROLES}
    routes = sorted(url_patterns(), key=lambda r: (classify(r) or ROUTES[r]).last)
    mismatches = []
    checked = 0
    for route in routes:
        spec = classify(route)
        assert spec is not None
        url = _url(route, spec, world)
        # The owner goes last: their posts may change what the others would see.
        for role in sorted(ROLES, key=lambda r: r == "owner"):
            got = outcome(_request(clients[role], spec, url, world))
            want = spec.expect[role]
            checked += 1
            if got not in want.split("|"):
                mismatches.append(f"{spec.method.upper()} {url} as {role}: want {want}, got {got}")
    assert checked > 600
    assert not mismatches, "\n".join(mismatches)
