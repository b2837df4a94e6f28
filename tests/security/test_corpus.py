"""The hostile corpus through every input: bundle files and the API (task fields, problem
statement, attempt ids, agent names, patch file names and content, trajectory text, test output),
review forms (label notes, fix request text and paths), campaign names and API token names.

Each payload is stored faithfully (read back equal) or, where a column cannot hold it (a NUL in a
text column, more than a bounded column's length), refused with a clear message; and every page
that shows it renders it inert (tests/security/corpus.py: `injection_problems`).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command
from django.test import Client
from rest_framework.test import APIClient

from grading.models import ApiToken, Attempt, Group, Run, Task
from grading.selectors.rollouts import trajectory_events
from grading.services.tokens import api_token_create
from review.blinded_cache import assignment_redactor, rendered_diffs
from review.models import Campaign
from review.services.campaigns import campaign_create
from review.services.queue import assignment_next
from tests.factories import ServiceAccountFactory, StaffFactory, UserFactory
from tests.importers.helpers import attempt, group, jsonl
from tests.security.corpus import (
    HUGE,
    NUL,
    PAYLOADS,
    file_name,
    fits_a_name,
    injection_problems,
    new_file_patch,
)
from tests.security.pages import assert_admin_pages_inert, assert_inert

pytestmark = pytest.mark.django_db
NAMED = [name for name in PAYLOADS if fits_a_name(name)]


def hostile_group(name: str, payload: str, *, names: bool = True) -> dict[str, Any]:
    """One group whose every text input carries the payload (identifiers only when they can)."""
    label = payload if names else name
    path = file_name(name, payload) if names else f"src/{name}.py"
    hostile = attempt(
        f"a-{label}",
        patch=new_file_patch(path, payload),
        test_output=f"output {payload}",
        agent={"system": f"sys {label}", "model": f"model {label}", "family": "fam"},
        trajectory={
            "format": "native",
            "events": [
                {"kind": "thought", "role": "assistant", "text": payload},
                {
                    "kind": "action",
                    "role": "assistant",
                    "text": "",
                    "tool": "bash",
                    "args": payload,
                },
            ],
        },
    )
    obj = group(
        task_id=f"task {label}", run=f"run {label}", group_id=f"group {label}", attempts=[hostile]
    )
    # A text column: a NUL goes to the bytes fields only (refusal is tested on its own).
    obj["task"]["problem_statement"] = payload.replace("\x00", "")
    obj["task"]["repo"] = f"acme/{label}"
    obj["attempts"].append(attempt("plain", agent=hostile["agent"]))
    return obj


def api_client() -> APIClient:
    _, secret = api_token_create(user=ServiceAccountFactory(username="loop"), name="loop")
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {secret}")
    return client


def post_bundle(client: APIClient, body: bytes) -> Any:
    return client.post("/api/v1/bundles", body, content_type="application/x-ndjson")


def assert_stored_faithfully(obj: dict[str, Any]) -> Group:
    stored = Group.objects.select_related("task", "step__run").get(external_id=obj["group_id"])
    sent_task, sent = obj["task"], obj["attempts"][0]
    assert stored.step.run.name == obj["run"]
    assert stored.task.external_id == sent_task["id"] and stored.task.repo == sent_task["repo"]
    assert stored.task.problem_statement == sent_task["problem_statement"]
    a = Attempt.objects.select_related("patch", "trajectory").get(
        group=stored, external_id=sent["id"]
    )
    assert (a.agent_system, a.agent_model) == (sent["agent"]["system"], sent["agent"]["model"])
    assert a.test_output() == sent["test_output"].encode()
    assert a.patch is not None and bytes(a.patch.content) == sent["patch"].encode()
    paths = list(a.patch.files.values_list("target_path", flat=True))
    assert paths == [sent["patch"].split("\n+++ b/", 1)[1].split("\n", 1)[0]]
    events = trajectory_events(trajectory=a.trajectory, count=10)
    assert [(e.get("text", ""), e.get("args")) for e in events] == [
        (e["text"], e.get("args")) for e in sent["trajectory"]["events"]
    ]
    return stored


@pytest.mark.parametrize("name", NAMED)
def test_the_api_stores_each_payload_in_every_field_faithfully(name: str) -> None:
    obj = hostile_group(name, PAYLOADS[name])
    response = post_bundle(api_client(), jsonl(obj))
    assert response.status_code == 201, response.json()
    assert_stored_faithfully(obj)


def test_a_bundle_file_stores_every_payload_faithfully(tmp_path: Path) -> None:
    objs = [hostile_group(name, PAYLOADS[name]) for name in NAMED]
    objs += [hostile_group(n, PAYLOADS[n], names=False) for n in (NUL, HUGE)]
    bundle = tmp_path / "hostile.jsonl"
    bundle.write_bytes(jsonl(*objs))
    call_command("import", "bundle", str(bundle))
    for obj in objs:
        assert_stored_faithfully(obj)


def test_a_nul_or_a_megabyte_in_bytes_fields_is_stored_faithfully() -> None:
    client = api_client()
    for name in (NUL, HUGE):
        obj = hostile_group(name, PAYLOADS[name], names=False)
        assert post_bundle(client, jsonl(obj)).status_code == 201
        stored = assert_stored_faithfully(obj)
        assert stored.task.problem_statement == PAYLOADS[name].replace("\x00", "")


NUL_TEXT_FIELDS = {
    "$.task.problem_statement": lambda o: o["task"].update(problem_statement="p\x00"),
    "$.run": lambda o: o.update(run="r\x00"),
    "$.group_id": lambda o: o.update(group_id="g\x00"),
    "$.task.id": lambda o: o["task"].update(id="t\x00"),
    "$.task.repo": lambda o: o["task"].update(repo="acme/\x00"),
    "$.attempts[0].id": lambda o: o["attempts"][0].update(id="a\x00"),
    "$.attempts[0].agent.system": lambda o: o["attempts"][0]["agent"].update(system="s\x00"),
}


@pytest.mark.parametrize("field", list(NUL_TEXT_FIELDS))
def test_a_nul_in_a_text_field_is_refused_with_a_clear_problem(field: str) -> None:
    obj = hostile_group("plain", "plain", names=False)
    NUL_TEXT_FIELDS[field](obj)
    response = post_bundle(api_client(), jsonl(obj))
    assert response.status_code == 400
    (problem,) = response.json()["problems"]
    assert problem["field"] == field and "NUL" in problem["message"]
    assert not Group.objects.exists() and not Run.objects.exists()


def test_a_nul_in_a_patch_file_name_is_refused_with_a_clear_problem() -> None:
    obj = hostile_group("plain", "plain", names=False)
    obj["attempts"][0]["patch"] = new_file_patch("src/a\x00b.py", "x = 1")
    response = post_bundle(api_client(), jsonl(obj))
    assert response.status_code == 400
    (problem,) = response.json()["problems"]
    assert problem["field"] == "$.attempts[0].patch" and "NUL" in problem["message"]
    assert not Task.objects.exists()


def test_a_megabyte_identifier_is_refused_not_truncated() -> None:
    obj = hostile_group("plain", "plain", names=False)
    obj["task"]["id"] = PAYLOADS[HUGE]
    response = post_bundle(api_client(), jsonl(obj))
    assert response.status_code == 400
    (problem,) = response.json()["problems"]
    assert problem["field"] == "$.task.id" and "long" in problem["message"]


# --- the review side -------------------------------------------------------------------------


@pytest.fixture
def hostile_review(settings: Any) -> dict[str, Any]:
    """Every named payload imported, in one campaign a reviewer has started."""
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    client = api_client()
    objs = [hostile_group(name, PAYLOADS[name]) for name in NAMED]
    objs.append(hostile_group(HUGE, PAYLOADS[HUGE], names=False))
    for obj in objs:
        assert post_bundle(client, jsonl(obj)).status_code == 201
    # One reviewer per group: with overlap 1, each one's next group is a different one.
    reviewers = [UserFactory(username=f"rita{n}") for n in range(len(objs))]
    staff = StaffFactory(username="root", is_superuser=True)
    campaign = campaign_create(
        name="Hostile", created_by=staff, reviewers=reviewers, filters={}, overlap=1
    )
    return {"reviewers": reviewers, "reviewer": reviewers[0], "staff": staff, "campaign": campaign}


def test_review_forms_store_payloads_faithfully_and_every_page_renders_them_inert(
    hostile_review: dict[str, Any],
) -> None:
    json_accept = {"HTTP_ACCEPT": "application/json"}
    groups = set()
    for reviewer in hostile_review["reviewers"]:
        client = Client()
        client.force_login(reviewer)
        assignment = assignment_next(campaign=hostile_review["campaign"], reviewer=reviewer)
        assert assignment is not None
        base = f"/review/a/{assignment.pk}"
        redactor = assignment_redactor(assignment=assignment)
        for c in assignment.candidates.select_related("attempt__patch"):
            # The file name as the reviewer sees it (agent names in it are redacted).
            diffs = rendered_diffs(
                patches={c.token: c.attempt.patch}, redactor=redactor, task=assignment.group.task
            )
            (path,) = [f.path for f in diffs[c.token]]
            payload = c.attempt.group.task.problem_statement
            short = payload if len(payload) < 10_000 else "long"
            saved = client.post(f"{base}/c/{c.token}/label", {"notes": short}, **json_accept)
            assert saved.status_code == 200, saved.content[:300]
            assert c.label.notes == short
            fix = {"path": path, "line": 1, "side": "new", "text": short, "severity": "nit"}
            made = client.post(f"{base}/c/{c.token}/fix", fix, **json_accept)
            assert made.status_code == 200, made.content[:300]
            assert not injection_problems(made.json()["html"])
            stored = c.fix_requests.get()
            assert (stored.path, stored.text) == (path, short)
            assert_inert(client, f"{base}/c/{c.token}/trajectory")
        assert_inert(client, f"{base}/")
        assert_inert(client, f"{base}/compare")
        assert_inert(client, "/review/")
        groups.add(assignment.group_id)
    assert len(groups) == len(hostile_review["reviewers"])


def test_forms_refuse_a_nul_or_an_oversized_value_clearly(hostile_review: dict[str, Any]) -> None:
    client = Client()
    client.force_login(hostile_review["reviewer"])
    assignment = assignment_next(
        campaign=hostile_review["campaign"], reviewer=hostile_review["reviewer"]
    )
    assert assignment is not None
    c = assignment.candidates.first()
    url = f"/review/a/{assignment.pk}/c/{c.token}/label"
    for value, reason in ((PAYLOADS[NUL], "Null characters"), (PAYLOADS[HUGE], "at most")):
        response = client.post(url, {"notes": value}, HTTP_ACCEPT="application/json")
        assert response.status_code == 400 and reason in json.dumps(response.json())
    assert not hasattr(c, "label") or c.label.notes == ""


def test_campaign_and_token_names_are_stored_faithfully_and_shown_inert(
    hostile_review: dict[str, Any],
) -> None:
    staff = hostile_review["staff"]
    client = Client()
    client.force_login(staff)
    for name in NAMED:
        response = client.post(
            "/review/staff/new",
            {
                "name": PAYLOADS[name],
                "reviewers": [hostile_review["reviewer"].pk],
                "overlap": 1,
                "reveal_policy": "never",
                "lease_minutes": 60,
            },
        )
        assert response.status_code == 302, response.content[:500]
        campaign = Campaign.objects.get(name=PAYLOADS[name])
        assert_inert(client, f"/review/staff/{campaign.pk}/")
        token, _ = api_token_create(user=staff, name=PAYLOADS[name][:100])
        assert ApiToken.objects.get(pk=token.pk).name == PAYLOADS[name][:100]
    for url in ["/review/staff/", "/admin/grading/apitoken/", "/admin/review/campaign/"]:
        assert_inert(client, url)
    reviewer = Client()
    reviewer.force_login(hostile_review["reviewer"])
    assert_inert(reviewer, "/review/")


def test_admin_pages_render_every_payload_inert(hostile_review: dict[str, Any]) -> None:
    client = Client()
    client.force_login(hostile_review["staff"])
    assert_admin_pages_inert(client)


def test_a_token_name_with_a_nul_or_too_long_is_refused_clearly() -> None:
    staff = StaffFactory.create(username="root")
    for name, reason in ((PAYLOADS[NUL], "NUL"), (PAYLOADS[HUGE], "1 to 100"), ("", "1 to 100")):
        with pytest.raises(ValueError, match=reason):
            api_token_create(user=staff, name=name)
    assert not ApiToken.objects.exists()
