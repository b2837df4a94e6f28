"""Who may reach what: the explicit table `test_permissions.py` checks every URL pattern against.

Roles: `anon` (no session), `api` (a service account's Bearer token with every scope and
nothing else), `submitter` (the same account's token with only the `submit` scope), `fresh` (a
reviewer with no assignment and no campaign), `other` (a reviewer in the campaign, with an
assignment of their own, asking for the owner's), `owner` (the reviewer whose assignment the URL
names), `staff` (`is_staff`, no model permissions), `superuser`. An outcome is a status code,
`login` / `admin-login` (a redirect to that login page), or several joined by `|`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from django.contrib.contenttypes.models import ContentType
from django.db.models import Model
from django.utils import timezone

from review.diffs import file_id_for
from review.models import Assignment, Disagreement
from tests.security.world import World, any_pk

ROLES = ("anon", "api", "submitter", "fresh", "other", "owner", "staff", "superuser")
Kwargs = Callable[[World], dict[str, Any]]


@dataclass(frozen=True)
class Route:
    expect: Mapping[str, str]
    method: str = "get"
    kwargs: Kwargs | None = None
    data: Callable[[World], dict[str, Any]] | None = None
    body: bytes | None = None
    content_type: str = "application/json"
    json: bool = False  # Accept: application/json (the page script's posts)
    query: str = ""
    last: bool = False  # changes state: requested after every read-only row
    extra: dict[str, Any] = field(default_factory=dict)


def roles(default: str, **over: str) -> dict[str, str]:
    unknown = set(over) - set(ROLES)
    assert not unknown, unknown
    return {role: over.get(role, default) for role in ROLES}


# A reviewer's own assignment: everyone else gets 404 (existence is not revealed), staff too.
OWN = roles("404", anon="login", api="login", submitter="login", owner="200")
OWN_POST = roles("404", anon="login", api="login", submitter="login")
# Staff pages: anonymous (and a token, which Django views ignore) to the login page, 403 for
# reviewers (no login loop), allowed for any `is_staff` user.
STAFF = roles("403", anon="login", api="login", submitter="login", staff="200", superuser="200")
# The Django admin: only staff get in; everyone else is sent to the admin's login page.
ADMIN_OUT = {"anon": "admin-login", "api": "admin-login", "submitter": "admin-login"}
ADMIN_OUT |= {"fresh": "admin-login"}
ADMIN_OUT |= {"other": "admin-login", "owner": "admin-login"}
# The API: a token is required, or a staff session (the browsable schema, scripts). A
# reviewer's session is refused: advantages carry the grader's verdict, which review is blind to.
API = roles("403", anon="401", api="200", staff="200", superuser="200")
# What the submit-only token reaches: sending groups and reading their advantages, no more.
API_SUBMIT = {**API, "submitter": "200"}
ANYONE = roles("200")
SIGNED_IN = roles("200", anon="login", api="login", submitter="login")


def _assignment(w: World) -> dict[str, Any]:
    return {"assignment_id": w.assignment.pk}


def _candidate(w: World) -> dict[str, Any]:
    return {"assignment_id": w.assignment.pk, "token": w.candidate.token}


def _label(w: World) -> dict[str, Any]:
    return {"tier": "t1", "notes": "ok"}


def _fix(w: World) -> dict[str, Any]:
    patch = w.candidate.attempt.patch
    assert patch is not None
    path = patch.files.order_by("pk").values_list("target_path", flat=True)[0]
    return {"path": path, "line": 1, "side": "new", "text": "why?", "severity": "nit"}


def _viewed(w: World) -> dict[str, Any]:
    return {"file": file_id_for(_fix(w)["path"]), "viewed": "1"}


def _flag(w: World) -> dict[str, Any]:
    flag, _ = Disagreement.objects.get_or_create(
        candidate=w.candidate, grader_run=w.grader_run, defaults={"created_at": timezone.now()}
    )
    return {"disagreement_id": flag.pk}


def _bundle() -> bytes:
    # An empty body: every role that gets through authentication gets the same clear 400.
    return b""


ROUTES: dict[str, Route] = {
    "": Route(roles("302", anon="login", api="login", submitter="login")),
    "healthz": Route(ANYONE),
    "readyz": Route(ANYONE),
    # Restricted by network (GAGAR_METRICS_ALLOW, loopback by default) or a bearer token, not by
    # role: the test client comes from 127.0.0.1 (tests/ops/test_metrics.py tests the refusals).
    "metrics": Route(ANYONE),
    "ops/": Route(STAFF),
    # A permanent redirect to the static icon, for everyone.
    "favicon.ico": Route(roles("301")),
    # --- the Django admin (per-model pages: ADMIN_MODEL_SUFFIXES below) -------------------
    "admin/": Route({**ADMIN_OUT, "staff": "200", "superuser": "200"}),
    "admin/login/": Route(roles("200", staff="302", superuser="302")),
    # GET never logs out (POST only); the admin first sends non-staff to its index.
    "admin/logout/": Route(roles("302", staff="405", superuser="405")),
    "admin/password_change/": Route({**ADMIN_OUT, "staff": "200", "superuser": "200"}),
    "admin/password_change/done/": Route({**ADMIN_OUT, "staff": "200", "superuser": "200"}),
    "admin/autocomplete/": Route({**ADMIN_OUT, "staff": "403", "superuser": "403"}),
    "admin/jsi18n/": Route({**ADMIN_OUT, "staff": "200", "superuser": "200"}),
    "admin/r/<path:content_type_id>/<path:object_id>/": Route(
        {**ADMIN_OUT, "staff": "404", "superuser": "404"},
        kwargs=lambda w: {
            "content_type_id": ContentType.objects.get_for_model(Assignment).pk,
            "object_id": w.assignment.pk,
        },
    ),
    "admin/auth/user/<id>/password/": Route(
        {**ADMIN_OUT, "staff": "403", "superuser": "200"}, kwargs=lambda w: {"id": w.owner.pk}
    ),
    "admin/grading/groupadvantages/lambda-cap/": Route(
        {**ADMIN_OUT, "staff": "403", "superuser": "200"}
    ),
    "admin/^(?P<app_label>auth|grading|review)/$": Route(
        {**ADMIN_OUT, "staff": "404", "superuser": "200"}
    ),
    "admin/(?P<url>.*)$": Route({**ADMIN_OUT, "staff": "404", "superuser": "404"}),
    # --- accounts ---------------------------------------------------------------------------
    "accounts/login/": Route(ANYONE),
    "accounts/logout/": Route(roles("405")),  # POST only: a link cannot log anyone out
    "accounts/password_change/": Route(SIGNED_IN),
    "accounts/password_change/done/": Route(SIGNED_IN),
    # --- review: the reviewer's pages ---------------------------------------------------------
    "review/": Route(SIGNED_IN),
    "review/campaigns/<int:campaign_id>/next": Route(
        # Only the campaign's reviewers draw from it; both already hold this group (302 to it).
        roles("404", anon="login", api="login", submitter="login", owner="302", other="302"),
        method="post",
        kwargs=lambda w: {"campaign_id": w.campaign.pk},
    ),
    "review/a/<int:assignment_id>/": Route(OWN, kwargs=_assignment),
    "review/a/<int:assignment_id>/compare": Route(OWN, kwargs=_assignment),
    "review/a/<int:assignment_id>/c/<str:token>/trajectory": Route(OWN, kwargs=_candidate),
    "review/a/<int:assignment_id>/c/<str:token>/file": Route(
        # Without a file id the owner gets a 404 too; the point is that nobody else learns more.
        roles("404", anon="login", api="login", submitter="login"),
        kwargs=_candidate,
    ),
    "review/a/<int:assignment_id>/c/<str:token>/panel": Route(OWN, kwargs=_candidate),
    "review/a/<int:assignment_id>/c/<str:token>/context": Route(
        # Without a block id the owner gets a 404 too (as for file pages).
        roles("404", anon="login", api="login", submitter="login"),
        kwargs=_candidate,
    ),
    "review/a/<int:assignment_id>/c/<str:token>/label": Route(
        {**OWN_POST, "owner": "200"}, method="post", kwargs=_candidate, data=_label, json=True
    ),
    "review/a/<int:assignment_id>/c/<str:token>/fix": Route(
        {**OWN_POST, "owner": "200"}, method="post", kwargs=_candidate, data=_fix, json=True
    ),
    "review/a/<int:assignment_id>/c/<str:token>/disagree": Route(
        # The owner has not submitted yet: a clear 302 back with a message, nothing stored.
        {**OWN_POST, "owner": "302"},
        method="post",
        kwargs=_candidate,
    ),
    "review/a/<int:assignment_id>/c/<str:token>/claim": Route(
        # Before submission there is no claim to mark, for the owner too: the same 404.
        OWN_POST,
        method="post",
        kwargs=_candidate,
        data=lambda w: {"claim": "k0", "mark": "correct"},
        json=True,
    ),
    "review/a/<int:assignment_id>/c/<str:token>/viewed": Route(
        {**OWN_POST, "owner": "200"}, method="post", kwargs=_candidate, data=_viewed, json=True
    ),
    "review/a/<int:assignment_id>/events": Route(
        {**OWN_POST, "owner": "200"},
        method="post",
        kwargs=_assignment,
        body=b'{"events": []}',
        json=True,
    ),
    "review/a/<int:assignment_id>/fix/<int:fix_id>/delete": Route(
        {**OWN_POST, "owner": "200"},
        method="post",
        kwargs=lambda w: {"assignment_id": w.assignment.pk, "fix_id": w.fix.pk},
        json=True,
        last=True,
    ),
    "review/a/<int:assignment_id>/submit": Route(
        # Incomplete labels: the owner gets the problems (400) and nothing is locked.
        {**OWN_POST, "owner": "400"},
        method="post",
        kwargs=_assignment,
        json=True,
        last=True,
    ),
    # --- review: staff ----------------------------------------------------------------------
    "review/staff/": Route(STAFF),
    "review/staff/new": Route(STAFF),
    "review/staff/<int:campaign_id>/": Route(
        STAFF, kwargs=lambda w: {"campaign_id": w.campaign.pk}
    ),
    "review/staff/adjudication/": Route(STAFF),
    "review/staff/adjudication/<int:disagreement_id>/": Route(STAFF, kwargs=_flag),
    "review/staff/adjudication/<int:disagreement_id>/reopen": Route(
        roles("403", anon="login", api="login", submitter="login", staff="302", superuser="302"),
        method="post",
        kwargs=_flag,
        last=True,
    ),
    # --- dashboards (staff) -------------------------------------------------------------------
    "dashboards/": Route(STAFF),
    "dashboards/audit": Route(STAFF),
    "dashboards/gate": Route(STAFF),
    "dashboards/export": Route(STAFF),
    "dashboards/export/<slug:what>.zip": Route(
        STAFF, kwargs=lambda w: {"what": "labels"}, query="?format=jsonl"
    ),
    "dashboards/csv/<slug:chart>.csv": Route(
        # Statistics not computed yet: 503 with Retry-After, still staff only.
        roles(
            "403",
            anon="login",
            api="login",
            submitter="login",
            staff="200|503",
            superuser="200|503",
        ),
        kwargs=lambda w: {"chart": "headline"},
    ),
    # --- API ----------------------------------------------------------------------------------
    "api/v1/bundles": Route(
        {**API, "api": "400", "submitter": "400", "staff": "400", "superuser": "400"},
        method="post",
        body=_bundle(),
        content_type="application/x-ndjson",
    ),
    "api/v1/training/groups": Route(
        {**API, "api": "400", "submitter": "400", "staff": "400", "superuser": "400"},
        method="post",
        body=_bundle(),
        content_type="application/x-ndjson",
    ),
    "api/v1/training/groups/<int:group_db_id>/advantages": Route(
        API_SUBMIT, kwargs=lambda w: {"group_db_id": w.group.pk}, query="?config=test-config"
    ),
    "api/v1/training/runs/<str:run>/steps/<int:step>/advantages": Route(
        API_SUBMIT,
        kwargs=lambda w: {"run": w.group.step.run.name, "step": w.group.step.number},
        query="?config=test-config",
    ),
    # Reads (scope read) and exports (scope export): grader output, never for a reviewer.
    "api/v1/runs": Route(API),
    "api/v1/runs/<str:run>/steps": Route(API, kwargs=lambda w: {"run": w.group.step.run.name}),
    "api/v1/groups/<int:group_db_id>/grader-runs": Route(
        API, kwargs=lambda w: {"group_db_id": w.group.pk}
    ),
    "api/v1/groups/<int:group_db_id>/verdicts": Route(
        API, kwargs=lambda w: {"group_db_id": w.group.pk}
    ),
    "api/v1/labels": Route(API),
    "api/v1/exports/advantages": Route(
        API, query="?format=jsonl&config=test-config&run=sample-run"
    ),
    "api/v1/exports/labels": Route(API, query="?format=jsonl"),
    "api/v1/exports/package": Route(API, query="?format=jsonl"),
    # Documentation only (no data): public, as the README promises.
    "api/v1/schema": Route(ANYONE),
    "api/v1/docs": Route(ANYONE),
}

# The admin's generated pages for every registered model; the object pages get a real object.
ADMIN_MODEL_SUFFIXES = (
    "",
    "add/",
    "<path:object_id>/history/",
    "<path:object_id>/delete/",
    "<path:object_id>/change/",
    "<path:object_id>/",
)
_SUPERUSER_DEFAULT = {suffix: "200" for suffix in ADMIN_MODEL_SUFFIXES}
_SUPERUSER_DEFAULT["<path:object_id>/"] = "302"  # the old-style URL redirects to change/

# Where an outcome differs from the default: derived data nobody adds by hand.
ADMIN_OVERRIDES: dict[str, dict[str, str]] = {
    "admin/grading/graderrun/add/": {"superuser": "403"},
    "admin/grading/groupadvantages/add/": {"superuser": "403"},
    # Made by manage.py grader_fit / grader_eval --approve, never by hand.
    "admin/grading/graderfit/add/": {"superuser": "403"},
    "admin/grading/graderapproval/add/": {"superuser": "403"},
}
# Imported rollouts are the record of what a training run did: read-only, never added or
# deleted by hand, even by a superuser (issue 17).
for _model in ("run", "step", "task", "group", "attempt", "patch", "trajectory", "trajectorychunk"):
    ADMIN_OVERRIDES[f"admin/grading/{_model}/add/"] = {"superuser": "403"}
    ADMIN_OVERRIDES[f"admin/grading/{_model}/<path:object_id>/delete/"] = {"superuser": "403"}
# What reviewers recorded is theirs (review/admin.py): labels and fix requests are shown, never
# added, changed or deleted by hand; assignments come from the queue and the reviews importer.
ADMIN_OVERRIDES["admin/review/assignment/add/"] = {"superuser": "403"}
for _model in ("label", "fixrequest"):
    ADMIN_OVERRIDES[f"admin/review/{_model}/add/"] = {"superuser": "403"}
    ADMIN_OVERRIDES[f"admin/review/{_model}/<path:object_id>/delete/"] = {"superuser": "403"}


def admin_model_route(model: type[Model], route: str, override: Mapping[str, str]) -> Route:
    suffix = route.split("/", 3)[3]
    # Staff without model permissions: 403 everywhere (the old-style URL redirects first).
    staff = "302" if suffix == "<path:object_id>/" else "403"
    expect = {**ADMIN_OUT, "staff": staff, "superuser": _SUPERUSER_DEFAULT[suffix], **override}
    return Route(expect, kwargs=lambda w: {"object_id": any_pk(model)})
