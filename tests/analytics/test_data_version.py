"""The data version (grading.services.data_version): every change the statistics read makes cached
numbers stale, including edits in place that counts and maxima never saw; and a guard that finds
writers of the models the statistics read which do not move it."""

from __future__ import annotations

import ast
import re
import threading
from io import BytesIO, StringIO
from pathlib import Path
from typing import Any

import pytest
from django.apps import apps
from django.contrib import admin
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.db import connection, connections, models, transaction
from django.forms import MultiWidget
from django.test import RequestFactory
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from grading.admin.data_version import VersionedAdmin
from grading.models import Attempt, DataVersion, GraderConfig, Group
from grading.services.data_version import data_changed
from grading.services.demo import sample_load
from grading.services.imports import groups_import
from grading.services.sources import bundle_records
from review.analytics import consensus as consensus_module
from review.analytics.filters import Filters, SnapshotParams
from review.analytics.frame import load_frame
from review.analytics.label_refresh import labels_refresh, labels_stale
from review.analytics.snapshots import STATS_MODELS, data_fingerprint, snapshot_for_page
from review.models import Assignment, Campaign, ClaimMark, Label, StatsSnapshot
from review.selectors.claims import candidate_claims
from review.services.campaigns import campaign_create
from review.services.claims import claim_mark_set
from review.services.queue import assignment_next
from review.services.reviewing import review_submit
from tests.analytics.conftest import run_worker
from tests.analytics.factories import grade_group, make_study, review_group, two_campaigns
from tests.factories import UserFactory
from tests.importers.helpers import group as bundle_group
from tests.importers.helpers import jsonl
from tests.review.blind import grader_claims_for
from tests.review.helpers import complete_labels

ROOT = Path(__file__).resolve().parents[2]
DASHBOARD = SnapshotParams(kind=StatsSnapshot.Kind.AGREEMENT, filters=Filters().as_json())


@pytest.fixture
def admin_client(client, db):
    client.force_login(UserFactory(username="root", is_staff=True, is_superuser=True))
    return client


def _study():
    study = make_study(3, 3, reviewers=2)
    for g, atts in zip(study.groups, study.attempts, strict=True):
        grade_group(g, atts, [1, 2, 3])
        for r, tiers in zip(study.reviewers, (["t1", "t2", "t3"], ["t1", "t3", "t3"]), strict=True):
            review_group(study.campaign, g, atts, r, tiers)
    return study


def _dashboard_computed(enqueued: Any) -> None:
    snapshot_for_page(params=DASHBOARD)
    assert run_worker() == 1
    assert snapshot_for_page(params=DASHBOARD).fresh


def _admin_save(client: Any, obj: Any, **changes: Any) -> None:
    """Save `obj`'s admin change form as a browser would: every field (and inline form) as the
    page shows it, with `changes` applied."""
    url = reverse(f"admin:{obj._meta.app_label}_{obj._meta.model_name}_change", args=[obj.pk])
    page = client.get(url)
    assert page.status_code == 200
    data: dict[str, Any] = {}
    forms = [page.context["adminform"].form]
    for inline in page.context["inline_admin_formsets"]:
        forms += [inline.formset.management_form, *inline.formset.forms]
    for form in forms:
        for name in form.fields:
            bound = form[name]
            value = bound.value()
            if value is None or value is False:
                continue
            widget = bound.field.widget
            if isinstance(widget, MultiWidget):  # a date and a time, as two inputs
                parts = zip(widget.widgets, widget.decompress(value), strict=True)
                data.update(
                    {f"{bound.html_name}_{i}": w.format_value(v) for i, (w, v) in enumerate(parts)}
                )
            elif isinstance(value, list):
                data[bound.html_name] = [str(v) for v in value]
            else:
                data[bound.html_name] = value
    data.update(changes)
    response = client.post(url, data)
    assert response.status_code == 302, response.context["adminform"].form.errors


# --- what no writer is told about: a restore, raw SQL ---------------------------------------


def test_a_restored_database_cannot_take_a_later_snapshot_for_current(
    db, enqueued, django_capture_on_commit_callbacks
):
    study = _study()
    backup = DataVersion.objects.values("token", "n").get(pk=1)
    # After the backup: a label changes and the dashboard is computed on that version.
    label = Label.objects.filter(candidate__attempt=study.attempts[0][2]).first()
    with django_capture_on_commit_callbacks(execute=True):
        Label.objects.filter(pk=label.pk).update(tier=Label.Tier.T1)
        data_changed()
    _dashboard_computed(enqueued)
    # Restored: the data and the counter go back; the next write counts up to the version the
    # snapshot carries, although the restored data differ from what it was computed on.
    Label.objects.filter(pk=label.pk).update(tier=label.tier)
    DataVersion.objects.filter(pk=1).update(**backup)
    with django_capture_on_commit_callbacks(execute=True):
        data_changed()
    assert snapshot_for_page(params=DASHBOARD).fresh  # the hazard the command is for
    out = StringIO()
    call_command("data_version", "--renew", stdout=out)
    assert "renewed" in out.getvalue() and data_fingerprint() in out.getvalue()
    assert str(backup["token"]) not in data_fingerprint()
    assert not snapshot_for_page(params=DASHBOARD).fresh


def test_the_command_prints_the_version_and_renew_starts_a_missing_row(db):
    out = StringIO()
    call_command("data_version", stdout=out)
    assert out.getvalue().strip() == f"data version {data_fingerprint()}"
    DataVersion.objects.all().delete()
    call_command("data_version", "--renew", stdout=StringIO())
    assert DataVersion.objects.get(pk=1).n == 1 and data_fingerprint() != "none"


# --- edits in place that counts and maxima missed ------------------------------------------


def test_it_sees_an_attempt_status_changed_in_the_admin(
    admin_client, enqueued, django_capture_on_commit_callbacks
):
    study = _study()
    _dashboard_computed(enqueued)
    before = data_fingerprint()
    # Confirming an exploit: the attempt stops being a passer, every statistic changes.
    with django_capture_on_commit_callbacks(execute=True):
        _admin_save(admin_client, study.attempts[0][0], status=Attempt.Status.EXPLOIT_CONFIRMED)
    assert (
        Attempt.objects.get(pk=study.attempts[0][0].pk).status == Attempt.Status.EXPLOIT_CONFIRMED
    )
    assert data_fingerprint() != before
    assert not snapshot_for_page(params=DASHBOARD).fresh


def test_it_sees_a_submitted_review_deleted_in_the_admin(
    admin_client, django_capture_on_commit_callbacks
):
    # Labels cannot be edited in the admin (review/admin.py); a review is redone by deleting its
    # assignment, and its labels go with it.
    study = _study()
    labels_refresh()
    assert not labels_stale()
    gone = Assignment.objects.filter(status=Assignment.Status.SUBMITTED).first()
    url = reverse("admin:review_assignment_delete", args=[gone.pk])
    with django_capture_on_commit_callbacks(execute=True):
        assert admin_client.post(url, {"post": "yes"}).status_code == 302
    assert not Label.objects.filter(candidate__assignment=gone.pk).exists()
    assert study.campaign.assignments.count() == 5
    # The stored consensus (exports, calibration) predates the deletion.
    assert labels_stale()


def test_it_sees_a_review_moved_to_another_campaign_in_the_admin(
    admin_client, django_capture_on_commit_callbacks
):
    study, second = two_campaigns()
    atts = study.attempts[0]
    table = consensus_module.campaign_consensus(campaign=second.pk)
    assert {table.rows([a.pk for a in atts])[a.pk].n_reviews for a in atts} == {2}
    moved = Assignment.objects.filter(campaign=second, group=study.groups[0]).first()
    with django_capture_on_commit_callbacks(execute=True):
        _admin_save(admin_client, moved, campaign=study.campaign.pk)
    # The campaign's cached consensus is not served again: one review left in it.
    again = consensus_module.campaign_consensus(campaign=second.pk)
    assert {again.rows([a.pk for a in atts])[a.pk].n_reviews for a in atts} == {1}


def test_it_sees_a_campaigns_reviewers_changed_in_the_admin(
    admin_client, django_capture_on_commit_callbacks
):
    study = _study()
    before = data_fingerprint()
    # An m2m field: written by the admin's save_related, after the campaign itself.
    with django_capture_on_commit_callbacks(execute=True):
        _admin_save(
            admin_client,
            study.campaign,
            created_by=str(study.reviewers[1].pk),
            reviewers=[str(study.reviewers[0].pk)],
            overlap=1,  # one reviewer can complete a group only at k = 1 (the admin checks)
        )
    assert list(Campaign.objects.get(pk=study.campaign.pk).reviewers.all()) == [study.reviewers[0]]
    assert data_fingerprint() != before


def test_it_sees_a_grader_configuration_renamed_in_the_admin(
    admin_client, enqueued, django_capture_on_commit_callbacks
):
    _study()
    _dashboard_computed(enqueued)
    config = GraderConfig.objects.get(name="grader-a")
    # The dashboards name configurations: the cached ones would show the old name.
    with django_capture_on_commit_callbacks(execute=True):
        _admin_save(admin_client, config, name="grader-renamed")
    assert not snapshot_for_page(params=DASHBOARD).fresh


def test_an_import_that_writes_nothing_leaves_the_version(db, django_capture_on_commit_callbacks):
    # A training loop retrying a step sends the same groups again: every cache stays valid.
    data = jsonl(bundle_group())
    with django_capture_on_commit_callbacks(execute=True):
        groups_import(records=bundle_records(stream=BytesIO(data), source="b", base_dir=None)[1])
    written = data_fingerprint()
    with django_capture_on_commit_callbacks(execute=True):
        again = groups_import(
            records=bundle_records(stream=BytesIO(data), source="b", base_dir=None)[1]
        )
    assert again.count("unchanged") == 1
    assert data_fingerprint() == written


def test_it_sees_a_claim_mark_changed(enqueued, db, django_capture_on_commit_callbacks):
    sample_load()
    group = Group.objects.get(external_id="sample-humanize-lite-1024")
    run = grader_claims_for(group)
    reviewer = get_user_model().objects.create_user("alice")
    campaign = campaign_create(
        name="Claims",
        created_by=None,
        reviewers=[reviewer],
        filters={},
        overlap=1,
        reveal_policy=Campaign.Reveal.AFTER_SUBMISSION,
    )
    assignment = assignment_next(campaign=campaign, reviewer=reviewer)
    complete_labels(assignment, "t2")
    submitted = review_submit(assignment=Assignment.objects.get(pk=assignment.pk))
    candidate = submitted.candidates.order_by("position")[0]
    handle = candidate_claims(run=run, candidates=[candidate])[0].handle
    claim_mark_set(candidate=candidate, handle=handle, mark=ClaimMark.Mark.CORRECT)
    _dashboard_computed(enqueued)
    # The same row, another mark: the claim-precision figures change, the row count does not.
    with django_capture_on_commit_callbacks(execute=True):
        claim_mark_set(candidate=candidate, handle=handle, mark=ClaimMark.Mark.WRONG)
    assert ClaimMark.objects.get().mark == ClaimMark.Mark.WRONG
    assert not snapshot_for_page(params=DASHBOARD).fresh


# --- the version itself --------------------------------------------------------------------


def test_a_rolled_back_write_moves_nothing(db, django_capture_on_commit_callbacks):
    before = data_fingerprint()
    with (
        django_capture_on_commit_callbacks(execute=True) as callbacks,
        pytest.raises(RuntimeError),
        transaction.atomic(),
    ):
        data_changed()
        raise RuntimeError("the write failed")
    assert callbacks == []
    assert data_fingerprint() == before


def test_the_version_is_one_query(django_assert_num_queries, db):
    with django_assert_num_queries(1):
        data_fingerprint()


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_a_long_writer_does_not_make_others_wait_for_the_version():
    # An import holds its transaction while it reads; a grader run finishing meanwhile must
    # commit its grades and move the version without waiting for the import.
    DataVersion.objects.get_or_create(pk=1)
    started, release = threading.Event(), threading.Event()
    errors: list[BaseException] = []

    def long_import() -> None:
        try:
            with transaction.atomic():
                data_changed()
                DataVersion.objects.filter(pk=1).values_list("n").get()
                started.set()
                release.wait(10)
        except BaseException as exc:  # reported by the main thread
            errors.append(exc)
        finally:
            connections.close_all()

    thread = threading.Thread(target=long_import)
    thread.start()
    try:
        assert started.wait(10)
        before = data_fingerprint()
        with connection.cursor() as cursor:
            cursor.execute("SET lock_timeout = '2s'")
        with transaction.atomic():
            data_changed()
        # Moved at once, while the import still runs (a row lock held by it would time out).
        assert data_fingerprint() != before
    finally:
        release.set()
        thread.join(10)
        with connection.cursor() as cursor:
            cursor.execute("SET lock_timeout = 0")
    assert not errors
    assert DataVersion.objects.get(pk=1).n == 2  # the import's bump, after its commit


# --- the guard: what the statistics read, and who writes it --------------------------------


def _tables_read(fn: Any) -> set[str]:
    with CaptureQueriesContext(connection) as queries:
        fn()
    return {
        t for q in queries.captured_queries for t in re.findall(r'(?:FROM|JOIN) "(\w+)"', q["sql"])
    }


def test_the_statistics_read_nothing_but_the_versioned_models(db):
    study, second = two_campaigns()
    by_table = {m._meta.db_table: m for m in apps.get_models(include_auto_created=True)}
    read: set[str] = set()
    # Every filter on, so every join the frame can make is made.
    for filters in (Filters(), Filters(run="run-1", step=1, repo="owner/repo", campaign=second.pk,
                                       reviewer=study.reviewers[0].pk)):  # fmt: skip
        read |= _tables_read(lambda f=filters: load_frame(f))
    models = {by_table[t] for t in read}
    # Reviewers' names (the sentinel table) come from the user model: edited only by hand in the
    # user admin, and shown, not counted.
    models.discard(get_user_model())
    # The campaign–group m2m's own table is CampaignGroup (a `through` model).
    assert models <= STATS_MODELS, sorted(m.__name__ for m in models - STATS_MODELS)


def _cascades_to(model: Any, seen: set[Any] | None = None) -> list[Any]:
    """The models a deletion of `model` deletes with it (CASCADE, followed all the way)."""
    seen = set() if seen is None else seen
    out = []
    for rel in model._meta.related_objects:
        if rel.on_delete is models.CASCADE and rel.related_model not in seen:
            seen.add(rel.related_model)
            out += [rel.related_model, *_cascades_to(rel.related_model, seen)]
    return out


def test_every_admin_that_can_write_a_versioned_model_moves_the_version(db):
    request = RequestFactory().get("/")
    request.user = get_user_model().objects.create_superuser("root", password=None)
    missing = []
    for model, model_admin in admin.site._registry.items():
        if not (
            model_admin.has_add_permission(request)
            or model_admin.has_change_permission(request)
            or model_admin.has_delete_permission(request)
        ):
            continue  # a read-only page: its inlines cannot write either
        inlines = [i(model, admin.site) for i in model_admin.inlines]
        writes = [
            i.model
            for i in inlines
            if i.has_add_permission(request, None)
            or i.has_change_permission(request)
            or i.has_delete_permission(request)
        ]
        if model_admin.has_delete_permission(request):
            writes += _cascades_to(model)  # deleting it deletes these too
        writes = [m for m in (model, *writes) if m in STATS_MODELS]
        if writes and not isinstance(model_admin, VersionedAdmin):
            missing.append(f"{type(model_admin).__name__} ({model.__name__})")
    assert not missing


# Writers of versioned models that rightly leave the version alone, each with the reason. A new
# writer fails the test below until it calls `data_changed()` or is listed here with its reason.
UNVERSIONED = {
    "grading/services/grader_runs.py": {
        "grader_config_default": "a new configuration: graded nothing yet",
        "grader_runs_request": "a pending run: the statistics read succeeded runs only",
        "grader_runs_regrade": "a failed run back to pending, or a new pending replica",
        "_claim": "a pending run claimed: not succeeded",
        "_release": "a running run handed back: not succeeded",
        "_finish_failed": "a run that failed: not succeeded",
        "grader_run_fail": "a pending or running run failed: not succeeded",
        "grader_runs_reap": "stuck running or pending runs: not succeeded",
        "run": "the heartbeat of a running run",
    },
    "grading/services/grader_spend.py": {
        "abandon_events": "a run's transcript and spend: not read",
        "record_abandoned": "a run's spend: not read",
    },
    "grading/services/repo_sources.py": {"task_source_check": "a task's source status: not read"},
    "grading/services/tokens.py": {"service_account_create": "an auth group, not a rollout group"},
    "grading/services/training.py": {"_pin": "a run's grader pin: not read"},
    "grading/services/trajectories.py": {"trajectory_store": "trajectories: not read"},
    "review/services/adjudication.py": {"disagreement_resolve": "disagreements: not read"},
    "review/services/demo.py": {"demo_campaign_ensure": "campaign reviewers: not read"},
    "review/services/grader_gate.py": {
        "grader_fit_create": "grader fits: not read",
        "grader_approve": "gate decisions: not read",
        "grader_approve_shipped": "gate decisions: not read",
    },
    "review/services/impact.py": {"campaign_impact_refresh": "queue-order scores: not read"},
    "review/services/queue.py": {
        "assignments_expire": "open assignments expire: only submitted ones are read",
        "_create": "a new open assignment: only submitted ones are read",
        "_reactivate": "an expired assignment resumed: only submitted ones are read",
    },
    "review/services/reviewing.py": {
        # Autosaves: a version per keystroke would keep every dashboard recomputing.
        "label_save": "a draft of an open assignment: read once submitted (review_submit)",
        "fix_request_create": "a draft of an open assignment: read once submitted",
        "fix_request_delete": "a draft of an open assignment: read once submitted",
        "disagreement_flag": "disagreements: not read",
    },
    "review/services/timing.py": {
        "_advance": "active time: not read",
        "assignment_clock_advance": "active time: not read",
        "review_events_record": "activity events and active time: not read",
    },
    "review/services/viewing.py": {"candidate_viewed_set": "viewed paths: not read"},
}

_WRITES = {"save", "delete", "update", "bulk_create", "bulk_update", "create", "get_or_create",
           "update_or_create"}  # fmt: skip
_QUERYSET = {"objects", "filter", "exclude", "all"}


def _chain(node: ast.AST) -> list[str]:
    """Names along a call's receiver: `Label.objects.filter(x).update` → update, (), filter, …"""
    out = []
    while True:
        if isinstance(node, ast.Attribute):
            out.append(node.attr)
            node = node.value
        elif isinstance(node, ast.Call):
            node = node.func
        else:
            if isinstance(node, ast.Name):
                out.append(node.id)
            return out


def _writes(fn: ast.AST, m2m: set[str]) -> bool:
    for call in ast.walk(fn):
        if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute)):
            continue
        name, receiver = call.func.attr, _chain(call.func.value)
        on_queryset = bool(_QUERYSET & set(receiver))
        if name in ("save", "delete") and not call.args:  # an instance, or a queryset
            return True
        if name in _WRITES - {"save", "delete"} and on_queryset:
            return True
        # An m2m manager: `campaign.groups.add(...)`, never a local set named like one.
        if name in {"add", "set", "remove", "clear"} and len(receiver) > 1 and receiver[0] in m2m:
            return True
    return False


def test_every_writer_of_a_versioned_model_moves_the_version():
    """A function that writes (save/update/delete/create…, or an m2m manager) and names a
    versioned model is covered when it calls `data_changed()`, or when every function that
    calls it is covered (helpers of one service), or when UNVERSIONED gives the reason."""
    names = {m.__name__ for m in STATS_MODELS}
    m2m = {f.name for m in STATS_MODELS for f in m._meta.many_to_many} | {
        r.related_name for m in STATS_MODELS for r in m._meta.related_objects if r.many_to_many
    }
    writers: set[tuple[str, str]] = set()  # (file, function)
    movers: set[tuple[str, str]] = set()  # call data_changed()
    callers: dict[str, set[tuple[str, str]]] = {}
    sources = [*ROOT.glob("grading/**/*.py"), *ROOT.glob("review/**/*.py")]
    for path in sources:
        rel = path.relative_to(ROOT).as_posix()
        if "/migrations/" in rel or rel.startswith("grading/sample/"):
            continue
        for fn in ast.walk(ast.parse(path.read_text())):
            if not isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            called = {
                c.func.id if isinstance(c.func, ast.Name) else c.func.attr
                for c in ast.walk(fn)
                if isinstance(c, ast.Call) and isinstance(c.func, ast.Name | ast.Attribute)
            }
            for name in called:
                callers.setdefault(name, set()).add((rel, fn.name))
            if "data_changed" in called:
                movers.add((rel, fn.name))
            if {n.id for n in ast.walk(fn) if isinstance(n, ast.Name)} & names and _writes(fn, m2m):
                writers.add((rel, fn.name))

    def covered(key: tuple[str, str], seen: frozenset[tuple[str, str]] = frozenset()) -> bool:
        if key in movers or key[1] in UNVERSIONED.get(key[0], {}):
            return True
        up = callers.get(key[1], set()) - seen - {key}
        return bool(up) and all(covered(c, seen | {key}) for c in up)

    uncovered = sorted(f"{rel}::{name}" for rel, name in writers if not covered((rel, name)))
    assert not uncovered, "write a versioned model without data_changed(): " + ", ".join(uncovered)
    # Every reason still names a writer (a renamed or removed one leaves no stale entry).
    listed = {(rel, name) for rel, entries in UNVERSIONED.items() for name in entries}
    assert listed <= writers - movers, sorted(listed - (writers - movers))
