"""Inputs that crashed an importer (RecursionError, ValueError, DataError, UnicodeEncodeError)
or slipped through: each is refused with the file, line and field and a message without SQL,
and nothing is written, through the bundle service, the API and the import command."""

from __future__ import annotations

import copy
import io
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from rest_framework.test import APIClient

from grading.grader.heuristic import HeuristicBackend
from grading.grader.inputs import CandidateInput, GroupInput, TaskInput
from grading.grader.loop import run_grader
from grading.models import Attempt, Group, Patch, Run, Task, Trajectory
from grading.services.imports import ImportFailedError, groups_import
from grading.services.sources import bundle_records
from grading.services.tokens import api_token_create
from tests.factories import ServiceAccountFactory
from tests.security.identity_marks import hostile_record

pytestmark = pytest.mark.django_db
Mutation = Callable[[dict[str, Any]], None]


def _text(record: dict[str, Any]) -> str:
    return json.dumps(record)


def _replace(old: str, new: str) -> Callable[[], bytes]:
    return lambda: _text(hostile_record()).replace(old, new, 1).encode("utf-8", "surrogatepass")


def _mutated(mutate: Mutation) -> Callable[[], bytes]:
    def line() -> bytes:
        record = copy.deepcopy(hostile_record())
        mutate(record)
        return json.dumps(record).encode("utf-8", "surrogatepass")

    return line


def _nested(n: int) -> str:
    return "[" * n + "]" * n


# name -> (bundle line, the field the problem names, words the message holds)
CASES: dict[str, tuple[Callable[[], bytes], str, str]] = {
    "nesting bomb in metadata": (
        _replace('"metadata": {}', '"metadata": {"x": ' + _nested(100_000) + "}"),
        "$",
        "nested deeper",
    ),
    "nesting in a trajectory": (
        _mutated(
            lambda r: r["attempts"][0]["trajectory"]["events"][0].update(x=json.loads(_nested(80)))
        ),
        "$.attempts[0].trajectory.events[0].x[0]",
        "nested deeper",
    ),
    "integer of 5000 digits": (_replace('"step": 0', '"step": ' + "9" * 5000), "$", "5000 digits"),
    "step over int32": (
        _replace('"step": 0', '"step": 2147483648'),
        "$.step",
        "at most 2147483647",
    ),
    "step over int64": (_replace('"step": 0', '"step": 9223372036854775808'), "$.step", "64-bit"),
    "turns over int32": (
        _mutated(lambda r: r["attempts"][0].update(num_turns=2**31)),
        "$.attempts[0].num_turns",
        "at most 2147483647",
    ),
    "tokens over int64": (
        _mutated(lambda r: r["attempts"][0].update(tokens_in=2**63)),
        "$.attempts[0].tokens_in",
        "64-bit",
    ),
    "trajectory number over int64": (
        _mutated(lambda r: r["attempts"][0]["trajectory"]["events"][0].update(n=2**64)),
        "$.attempts[0].trajectory.events[0].n",
        "64-bit",
    ),
    "NaN in test_report": (
        _replace('"harness": "run by', '"x": NaN, "harness": "run by'),
        "$",
        "NaN is not JSON",
    ),
    "Infinity in metadata": (
        _replace('"metadata": {}', '"metadata": {"x": -Infinity}'),
        "$",
        "Infinity is not JSON",
    ),
    "float overflow": (_replace('"metadata": {}', '"metadata": {"x": 1e999}'), "$", "out of range"),
    "lone surrogate in group id": (
        _replace('"hostile-identity-group"', '"bad\\ud800id"'),
        "$.group_id",
        "lone surrogate",
    ),
    "lone surrogate in a model name": (
        _replace('"zephyr-coder-9b-2026-01"', '"m\\udc00"'),
        "$.attempts[0].agent.model",
        "lone surrogate",
    ),
    "lone surrogate in the problem statement": (
        _mutated(lambda r: r["task"].update(problem_statement="x\ud800y")),
        "$.task.problem_statement",
        "lone surrogate",
    ),
    "lone surrogate in a patch": (
        _mutated(lambda r: r["attempts"][0].update(patch=r["attempts"][0]["patch"] + "+\ud800\n")),
        "$.attempts[0].patch",
        "lone surrogate",
    ),
    "a passing attempt without a patch": (
        _mutated(lambda r: r["attempts"][0].update(patch=None)),
        "$.attempts[0].patch",
        "without a patch cannot pass",
    ),
    "a newline in an id": (
        _mutated(lambda r: r.update(group_id="a\nb")),
        "$.group_id",
        "control character U+000A",
    ),
    "an escape in an attempt id": (
        _mutated(lambda r: r["attempts"][1].update(id="a\x1b[31m")),
        "$.attempts[1].id",
        "control character U+001B",
    ),
    "an id not in NFC": (
        _mutated(lambda r: r["task"].update(id="cafe\u0301")),
        "$.task.id",
        "not in Unicode NFC",
    ),
}


def counts() -> dict[str, int]:
    return {m.__name__: m.objects.count() for m in (Run, Task, Group, Attempt, Patch, Trajectory)}


def _import(body: bytes) -> None:
    _, records = bundle_records(stream=io.BytesIO(body), source="hostile.jsonl", base_dir=None)
    groups_import(records=records)


@pytest.mark.parametrize("name", list(CASES))
def test_the_bundle_service_refuses_it_and_writes_nothing(name: str) -> None:
    line, field, words = CASES[name]
    with pytest.raises(ImportFailedError) as refused:
        _import(line() + b"\n")
    assert counts() == dict.fromkeys(counts(), 0)
    (problem,) = refused.value.report.problems
    assert (problem.source, problem.line) == ("hostile.jsonl", 1)
    assert problem.field.startswith(field) and words in problem.message, problem
    assert len(problem.field) < 200


@pytest.fixture
def api() -> APIClient:
    user = ServiceAccountFactory.create()
    _, secret = api_token_create(user=user, name="loop")
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {secret}")
    return client


@pytest.mark.parametrize("name", list(CASES))
def test_the_api_answers_400_with_line_and_field(api: APIClient, name: str) -> None:
    line, field, words = CASES[name]
    for body in (line() + b"\n", b"[" + line() + b"]"):
        response = api.post("/api/v1/bundles", data=body, content_type="application/x-ndjson")
        assert response.status_code == 400, response.content[:300]
        text = response.content.decode()
        assert words in text and "SELECT" not in text and "INSERT" not in text
        problems = response.json()["problems"]
        # An array body that cannot be decoded is read as it came: its one row is "$[0]", on
        # line 1; one that decodes is located by its index in the array (no lines there).
        where = problems[0]["field"].replace("$[0]", "$", 1)
        located = (problems[0]["line"], problems[0].get("index"))
        assert located in ((1, None), (None, 0)) and where.startswith(field), problems
    assert counts() == dict.fromkeys(counts(), 0)


@pytest.mark.parametrize("name", list(CASES))
def test_the_training_api_answers_400_problem_details_with_line_and_field(
    api: APIClient, name: str
) -> None:
    line, field, words = CASES[name]
    for query in ("", "?partial=true"):
        response = api.post(
            f"/api/v1/training/groups{query}",
            data=line() + b"\n",
            content_type="application/x-ndjson",
        )
        assert response.status_code == 400, response.content[:300]
        assert response["Content-Type"].startswith("application/problem+json")
        text = response.content.decode()
        assert words in text and "SELECT" not in text and "INSERT" not in text
        problem = response.json()
        assert problem["status"] == 400 and problem["title"] == "Invalid bundle"
        (one,) = problem["problems"]
        assert one["line"] == 1 and one["field"].startswith(field), one
    assert counts() == dict.fromkeys(counts(), 0)


@pytest.mark.parametrize("name", list(CASES))
def test_the_import_command_refuses_it_with_file_line_and_field(tmp_path: Path, name: str) -> None:
    line, field, words = CASES[name]
    path = tmp_path / "hostile.jsonl"
    path.write_bytes(line() + b"\n")
    for partial in ((), ("--partial",)):
        err = io.StringIO()
        with pytest.raises(CommandError, match="nothing was written"):
            call_command(
                "import", "bundle", str(path), "--no-progress", *partial,
                stdout=io.StringIO(), stderr=err,
            )  # fmt: skip
        said = err.getvalue()
        assert f"{path}:1: {field}" in said and words in said, said[:500]
        assert "SELECT" not in said and "INSERT" not in said and "Traceback" not in said
    assert counts() == dict.fromkeys(counts(), 0)


def test_the_api_refuses_an_empty_or_blank_body(api: APIClient) -> None:
    for body in (b"", b"  \n\n"):
        response = api.post("/api/v1/bundles", data=body, content_type="application/x-ndjson")
        assert response.status_code == 400


@pytest.mark.parametrize("body", [b"", b" \n\t\n"])
def test_the_import_command_fails_on_an_empty_file(tmp_path: Path, body: bytes) -> None:
    path = tmp_path / "empty.jsonl"
    path.write_bytes(body)
    err = io.StringIO()
    with pytest.raises(CommandError):
        call_command("import", "bundle", str(path), stdout=io.StringIO(), stderr=err)
    assert "nothing to import" in err.getvalue()


def test_a_patch_over_the_limit_is_refused(settings: Any) -> None:
    settings.GAGAR_MAX_PATCH_BYTES = 500
    with pytest.raises(ImportFailedError) as refused:
        _import(_text(hostile_record()).encode() + b"\n")
    problem = refused.value.report.problems[0]
    assert problem.field == "$.attempts[0].patch"
    assert "over the limit of 500 (GAGAR_MAX_PATCH_BYTES)" in problem.message
    assert counts() == dict.fromkeys(counts(), 0)


def _edit_patch(n: int) -> str:
    return (
        f"diff --git a/lib/a.py b/lib/a.py\n--- a/lib/a.py\n+++ b/lib/a.py\n"
        f"@@ -1,2 +1,2 @@\n keep\n-x = 0\n+x = {n}\n"
    )


def test_the_heuristic_grader_survives_a_pure_rename_in_one_candidate() -> None:
    rename = (
        "diff --git a/old.py b/new.py\nsimilarity index 100%\n"
        "rename from old.py\nrename to new.py\n"
    )
    candidates = [
        CandidateInput("a", _edit_patch(1), True),
        CandidateInput("b", _edit_patch(2), True),
        CandidateInput("c", _edit_patch(3) + rename, True),
    ]
    group = GroupInput(TaskInput("make x non-zero", None, ""), candidates)
    out = run_grader(group, HeuristicBackend(), seed=1)
    assert out.status == "ok", out.problems
    assert out.verdict is not None and sorted(out.verdict["ordering"]) == ["a", "b", "c"]


def test_too_many_attempts_says_the_limit() -> None:
    record = hostile_record()
    record["attempts"] = [
        {**record["attempts"][3], "id": f"a{n}", "patch": "", "test_reward": 0.0}
        for n in range(1025)
    ]
    with pytest.raises(ImportFailedError) as refused:
        _import(json.dumps(record).encode() + b"\n")
    (problem,) = refused.value.report.problems
    assert problem.field == "$.attempts" and "1025 (at most 1024)" in problem.message


def test_the_api_refuses_other_content_types(api: APIClient) -> None:
    body = json.dumps(hostile_record()).encode()
    for content_type in ("text/plain", "image/png", "application/x-www-form-urlencoded"):
        response = api.post("/api/v1/bundles", data=body, content_type=content_type)
        assert response.status_code == 415, (content_type, response.status_code)
        response = api.post("/api/v1/training/groups", data=body, content_type=content_type)
        assert response.status_code == 415
    assert counts() == dict.fromkeys(counts(), 0)


def test_the_api_refuses_a_body_over_the_limit_by_its_length(api: APIClient, settings: Any) -> None:
    settings.GAGAR_MAX_UPLOAD_BYTES = 1000
    body = json.dumps(hostile_record()).encode()
    for url in ("/api/v1/bundles", "/api/v1/training/groups"):
        response = api.post(url, data=body, content_type="application/x-ndjson")
        assert response.status_code == 413
        assert "over the limit of 1000" in response.content.decode()
    assert counts() == dict.fromkeys(counts(), 0)


class _CountingStream(io.BytesIO):
    def __init__(self, size: int) -> None:
        super().__init__(b"x" * size)
        self.read_bytes = 0

    def read(self, n: int | None = -1) -> bytes:
        chunk = super().read(n)
        self.read_bytes += len(chunk)
        return chunk


def test_a_body_without_a_length_is_cut_off_while_read(settings: Any) -> None:
    from grading.api.bundles import BodyTooLargeError, RawBundleParser

    settings.GAGAR_MAX_UPLOAD_BYTES = 3 * 1024 * 1024
    stream = _CountingStream(50 * 1024 * 1024)
    with pytest.raises(BodyTooLargeError):
        RawBundleParser().parse(stream, parser_context={})
    # Read past the limit by at most one chunk, never to the end.
    assert stream.read_bytes <= 4 * 1024 * 1024


def test_a_nesting_bomb_in_a_swebench_trajectory_is_refused(tmp_path: Path) -> None:
    from tests.security.test_corpus_swebench import assert_refused, hostile_inputs

    args = hostile_inputs("bomb", "plain", names=False).write(tmp_path)
    (traj,) = tmp_path.rglob("*.traj")
    traj.write_text(_nested(100_000))
    message = assert_refused(args)
    assert "nested deeper than" in message and str(traj) in message


def test_a_report_naming_instances_not_in_the_tasks_is_warned_about(tmp_path: Path) -> None:
    from tests.security.test_corpus_swebench import hostile_inputs

    inputs = hostile_inputs("ghost", "plain", names=False)
    inputs.systems[1].report = {"resolved": ["ghost-1", "ghost-2"]}
    output = io.StringIO()
    err = io.StringIO()
    call_command("import", "swebench", *inputs.write(tmp_path), stdout=output, stderr=err)
    # A warning in the import's summary, and the import goes through.
    said = output.getvalue()
    assert 'names 2 instances not in the tasks: "ghost-1", "ghost-2" (ignored)' in said, said
    assert "note: " in said and Group.objects.count() == 1


@pytest.mark.parametrize("which", ["tasks", "predictions"])
@pytest.mark.parametrize("body", ["", " \n\t\n", "[]"])
def test_the_swebench_import_fails_on_an_empty_file(tmp_path: Path, which: str, body: str) -> None:
    files = {
        "tasks": json.dumps({"instance_id": "a-1", "repo": "a/b", "problem_statement": "x"}),
        "predictions": json.dumps(
            {"instance_id": "a-1", "model_name_or_path": "m", "model_patch": _edit_patch(1)}
        ),
    }
    files[which] = body
    for name, text in files.items():
        (tmp_path / f"{name}.json").write_text(text)
    err = io.StringIO()
    with pytest.raises(CommandError, match="nothing was written"):
        call_command(
            "import", "swebench", "--tasks", str(tmp_path / "tasks.json"),
            "--predictions", str(tmp_path / "predictions.json"), "--no-progress",
            stdout=io.StringIO(), stderr=err,
        )  # fmt: skip
    what = "no task records" if which == "tasks" else "no predictions"
    assert f"{tmp_path / f'{which}.json'}: {what} (the file is empty" in err.getvalue()
    assert counts() == dict.fromkeys(counts(), 0)
