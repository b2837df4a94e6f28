"""The client over real HTTP against the live server: submit, wait, fetch, retries, errors."""

from __future__ import annotations

import asyncio
import json
import threading
import time
import zipfile
from pathlib import Path

import httpx
import pytest
from gagar_client import ApiError, AsyncClient, BundleError, Client, RetryPolicy, bundle
from gagar_client.bundle import json_schema

from grading.models import GraderRun, Group
from tests.client.helpers import RUN, pure_advantages, two_group_step
from tests.conftest import PROJECT_ROOT

pytestmark = pytest.mark.django_db(transaction=True)


class Recording(httpx.HTTPTransport):
    """The real transport, noting each answer's status (to see what the client retried)."""

    def __init__(self) -> None:
        super().__init__()
        self.statuses: list[int] = []

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        response = super().handle_request(request)
        self.statuses.append(response.status_code)
        return response


def test_the_packaged_schema_is_the_published_one():
    published = PROJECT_ROOT / "docs" / "formats" / "gagar.group.v1.schema.json"
    assert json_schema() == json.loads(published.read_text())


@pytest.mark.postgres
def test_a_step_with_repeated_attempt_ids_comes_back_per_group_and_attempt(gagar, grading_worker):
    submission = gagar.submit(two_group_step())
    assert [g.outcome for g in submission.groups] == ["created", "created"]
    adv = gagar.wait(RUN, 0, deadline_s=30)
    assert adv.counts["graded"] == 2 and adv.complete
    keys = adv.by_key()
    # 16 rows: the same attempt ids in two groups never overwrite each other.
    assert len(keys) == 16
    assert {a for _, a in keys} == {f"r{i}" for i in range(8)}
    for group in Group.objects.filter(step__run__name=RUN):
        want = pure_advantages(group)
        got = {a: adv.get(group.external_id, a).adv_gagar for a in want}
        assert got == pytest.approx(want, abs=1e-12)
    # The two groups really differ on the same attempt id.
    assert adv.get(f"{RUN}/0/t-a", "r2").adv_gagar > 0 > adv.get(f"{RUN}/0/t-b", "r2").adv_gagar
    infra = adv.get(f"{RUN}/0/t-a", "r6")
    assert not infra.included and infra.adv_gagar == 0 and infra.reward_equivalent is None


def test_a_retried_submission_is_replayed_not_imported_twice(gagar):
    first = gagar.submit(two_group_step())
    again = gagar.submit(two_group_step())
    assert not first.replayed and again.replayed
    assert again.raw == first.raw
    assert Group.objects.count() == 2 and GraderRun.objects.count() == 2


def test_the_wait_ends_at_the_deadline_with_flagged_grpo(gagar):
    gagar.submit(two_group_step())
    start = time.monotonic()
    adv = gagar.wait(RUN, 0, deadline_s=0.5)
    assert 0.5 <= time.monotonic() - start < 5
    assert adv.counts["fallback"] == 2
    row = adv.get(f"{RUN}/0/t-b", "r7")
    assert row.fallback and row.fallback_reason == "deadline" and row.coefficient == 1.0
    assert row.adv_gagar == row.adv_grpo


def test_a_bad_group_is_refused_before_sending_with_its_line_and_field(gagar):
    groups = two_group_step()
    groups[1].attempts[3].test_reward = 1.5
    with pytest.raises(BundleError) as caught:
        gagar.submit(groups)
    (problem,) = caught.value.problems
    assert problem.line == 2 and problem.field == "attempts.3.test_reward"
    assert not Group.objects.exists()


def test_a_server_refusal_is_an_api_error_with_the_problems_and_is_not_retried(live_server, token):
    recording = Recording()
    client = Client(live_server.url, token, transport=recording)
    body = bundle(two_group_step())
    bad = body.replace(b'"task": {"id": "t-b"', b'"task": {"id": ""', 1)
    with pytest.raises(ApiError) as caught:
        client.submit(bad)
    err = caught.value
    assert err.status == 400 and err.type == "urn:gagar:problem:invalid-bundle"
    assert err.problems and err.problems[0].line == 2 and "task.id" in err.problems[0].field
    assert recording.statuses == [400]
    with pytest.raises(ApiError) as caught:
        client.advantages("no-such-run", 3)
    assert caught.value.status == 404 and recording.statuses == [400, 404]


def test_429_is_retried_after_the_servers_retry_after(live_server, token, settings):
    settings.GAGAR_API_RATE = "2/second"
    recording = Recording()
    client = Client(live_server.url, token, transport=recording)
    start = time.monotonic()
    for _ in range(5):
        assert client.runs() == []
    assert 429 in recording.statuses and recording.statuses.count(200) == 5
    assert time.monotonic() - start >= 1.0  # it waited instead of hammering


def test_a_connection_failure_is_retried_with_backoff_then_raised():
    client = Client(
        "http://127.0.0.1:9", "t", retry=RetryPolicy(attempts=3, backoff_s=0.05), timeout_s=1
    )
    start = time.monotonic()
    with pytest.raises(httpx.ConnectError):
        client.runs()
    assert time.monotonic() - start >= 0.05  # two sleeps of ≥ 0.025 s (jittered)


@pytest.mark.postgres
def test_reads_labels_verdicts_and_exports_come_through_the_client(gagar, grading_worker, tmp_path):
    gagar.submit(two_group_step())
    adv = gagar.wait(RUN, 0, deadline_s=30)
    assert adv.complete
    assert [r["name"] for r in gagar.runs()] == [RUN]
    assert [s["step"] for s in gagar.steps(RUN)] == [0]
    group_db_id = adv.group(f"{RUN}/0/t-a").group_db_id
    (verdict,) = gagar.verdicts(group_db_id)
    # gagar.v2: grades keyed by (group id, attempt id), tier 1–3 or null plus exploit flags.
    assert set(verdict.by_key()) == {(f"{RUN}/0/t-a", a) for a in ("r0", "r1", "r2")}
    assert all(g.tier in (1, 2, 3) and g.exploit is False for g in verdict.grades)
    assert verdict.document is not None and set(verdict.document["candidates"]) <= {
        "r0",
        "r1",
        "r2",
    }
    (run,) = gagar.grader_runs(group_db_id)
    assert run.status == "succeeded" and run.grader_run_id == verdict.grader_run_id
    assert run.group == f"{RUN}/0/t-a" and run.group_db_id == group_db_id
    labels = gagar.labels(run=RUN, page_size=5)
    assert len(labels) == 16 and {r["attempt_id"] for r in labels} >= {"r0", "r7"}
    path = gagar.export("advantages", tmp_path / "adv.zip", format="jsonl", run=RUN)
    with zipfile.ZipFile(path) as zf:
        assert "manifest.json" in zf.namelist()
        rows = [json.loads(x) for x in zf.read("advantages_attempts.jsonl").splitlines()]
    assert len(rows) == 16
    labels_zip = gagar.export("labels", tmp_path / "labels.zip", format="csv", run=RUN)
    assert "labels.csv" in zipfile.ZipFile(labels_zip).namelist()


@pytest.mark.postgres
def test_the_async_client_has_the_same_calls(live_server, token, grading_worker, tmp_path):
    async def loop() -> dict[tuple[str, str], float]:
        async with AsyncClient(live_server.url, token) as client:
            await client.submit(two_group_step(step=3))
            adv = await client.wait(RUN, 3, deadline_s=30)
            assert [r["name"] for r in await client.runs()] == [RUN]
            assert [s["step"] for s in await client.steps(RUN)] == [3]
            db_id = adv.group(f"{RUN}/3/t-a").group_db_id
            assert len(await client.verdicts(db_id)) == 1
            assert (await client.grader_runs(db_id))[0].status == "succeeded"
            assert len(await client.labels(run=RUN)) == 16
            again = await client.group_advantages(db_id)
            assert again.get(f"{RUN}/3/t-a", "r0") == adv.get(f"{RUN}/3/t-a", "r0")
            path = await client.export("advantages", tmp_path / "a.zip", format="csv", run=RUN)
            assert "advantages_attempts.csv" in zipfile.ZipFile(path).namelist()
            return adv.adv_gagar()

    # A thread of its own: a session-wide Playwright may already run a loop on this one.
    result: dict[str, dict[tuple[str, str], float]] = {}
    thread = threading.Thread(target=lambda: result.update(values=asyncio.run(loop())))
    thread.start()
    thread.join(timeout=60)
    values = result["values"]
    assert len(values) == 16
    group = Group.objects.get(external_id=f"{RUN}/3/t-b")
    want = pure_advantages(group)
    assert {a: values[(group.external_id, a)] for a in want} == pytest.approx(want, abs=1e-12)


@pytest.mark.postgres
def test_the_cli_submits_fetches_and_exports(live_server, token, grading_worker, tmp_path, capsys):
    from gagar_client.cli import main

    step_file = tmp_path / "step.jsonl"
    step_file.write_bytes(bundle(two_group_step()))
    common = ["--url", live_server.url, "--token", token]
    assert main([*common, "submit", str(step_file), "--wait", "30"]) == 0
    out = capsys.readouterr().out
    assert '"graded": 2' in out
    assert main([*common, "advantages", RUN, "0", "--format", "csv"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("group,attempt,") and len(lines) == 17
    zip_path = tmp_path / "out.zip"
    assert main([*common, "export", "advantages", "--run", RUN, "--out", str(zip_path)]) == 0
    assert "advantages_attempts.parquet" in zipfile.ZipFile(zip_path).namelist()
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"schema": "gagar.group.v1"}\n')
    assert main([*common, "submit", str(bad)]) == 1
    assert "line 1" in capsys.readouterr().err


def test_exports_stream_to_disk_without_a_partial_file_left(gagar, tmp_path):
    gagar.submit(two_group_step())
    path = gagar.export("package", tmp_path / "pkg.zip", format="jsonl", run=RUN)
    assert zipfile.ZipFile(path).read("manifest.json")
    assert not list(Path(tmp_path).glob("*.partial"))


def test_the_client_package_imports_no_django():
    import subprocess
    import sys

    code = (
        "import sys, gagar_client, gagar_client.cli, gagar_client.adapters.trl, "
        "gagar_client.adapters.verl, gagar_client.adapters.openrlhf, gagar_client.adapters.rllm; "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('django', 'rest_framework', "
        "'grading', 'review', 'torch')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


class _Flaky:
    """A real HTTP server on loopback that fails the first answers in a chosen way."""

    def __init__(self, failures: list[tuple[int, dict[str, str]]]) -> None:
        import http.server

        self.failures = list(failures)
        self.seen = 0
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                outer.seen += 1
                status, headers = outer.failures.pop(0) if outer.failures else (200, {})
                body = (
                    b'{"count": 0, "next": null, "previous": null, "results": []}'
                    if status == 200
                    else b'{"type": "about:blank", "title": "x", "status": %d, "detail": "x"}'
                    % status
                )
                self.send_response(status)
                for k, v in {"Content-Type": "application/json", **headers}.items():
                    self.send_header(k, v)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: object) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def test_503_and_502_are_retried_but_500_and_404_are_not():
    flaky = _Flaky([(503, {"Retry-After": "0"}), (502, {})])
    try:
        client = Client(flaky.url, "t", retry=RetryPolicy(attempts=4, backoff_s=0.01))
        assert client.runs() == [] and flaky.seen == 3
        for status in (500, 404):
            flaky.failures, flaky.seen = [(status, {})], 0
            with pytest.raises(ApiError) as caught:
                client.runs()
            assert caught.value.status == status and flaky.seen == 1
        # Retries are bounded: a server that keeps failing ends in the error.
        flaky.failures, flaky.seen = [(503, {"Retry-After": "0"})] * 10, 0
        with pytest.raises(ApiError):
            client.runs()
        assert flaky.seen == 4
    finally:
        flaky.close()
