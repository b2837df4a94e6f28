"""The `gagar` CLI on bad input and a server it cannot reach: one line on stderr naming what is
wrong, a non-zero exit, never a traceback; and a `page_size` over the server's cap is said."""

from __future__ import annotations

import gzip
import socket
import warnings

import httpx
import pytest
from gagar_client import Client
from gagar_client.cli import main

COMMON = ["--url", "http://127.0.0.1:9", "--token", "gagar_test"]


def closed_port_url() -> str:
    """A local URL nothing listens on (a port bound, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}"


def one_line_error(capsys) -> str:
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1, captured.err
    assert "Traceback" not in captured.err
    return lines[0]


def test_submitting_a_folder_is_one_line_and_a_non_zero_exit(tmp_path, capsys):
    assert main([*COMMON, "submit", str(tmp_path)]) == 1
    assert one_line_error(capsys) == (
        f"gagar: {tmp_path}: is a folder, not a bundle file (give the .jsonl file)"
    )


def test_submitting_a_missing_or_gzip_file_is_one_line(tmp_path, capsys):
    assert main([*COMMON, "submit", str(tmp_path / "nope.jsonl")]) == 1
    assert one_line_error(capsys) == f"gagar: {tmp_path / 'nope.jsonl'}: no such file"
    packed = tmp_path / "step.jsonl.gz"
    packed.write_bytes(gzip.compress(b'{"schema": "gagar.group.v1"}\n'))
    assert main([*COMMON, "submit", str(packed)]) == 1
    assert "not UTF-8 text (byte 0x8b at byte 1)" in one_line_error(capsys)


@pytest.mark.parametrize(
    "command",
    [
        ["advantages", "run-1", "0"],
        ["export", "labels", "--out", "labels.zip"],
    ],
)
def test_a_server_that_is_down_is_one_line_with_its_url(command, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    url = closed_port_url()
    assert main(["--url", url, "--token", "gagar_test", *command]) == 1
    line = one_line_error(capsys)
    assert line.startswith(f"gagar: cannot reach {url}: ")
    assert not (tmp_path / "labels.zip").exists()


def _labels_server(cap: int) -> httpx.MockTransport:
    """A server holding 5 label rows that sends at most `cap` a page, as the real one does."""
    rows = [{"attempt_id": i} for i in range(5)]

    def handle(request: httpx.Request) -> httpx.Response:
        size = min(int(request.url.params.get("page_size", 100)), cap)
        page = int(request.url.params.get("page", 1))
        chunk = rows[(page - 1) * size : page * size]
        more = page * size < len(rows)
        following = f"http://gagar/api/v1/labels?page={page + 1}&page_size={size}"
        return httpx.Response(
            200, json={"results": chunk, "next": following if more else None, "count": 5}
        )

    return httpx.MockTransport(handle)


def test_a_page_size_over_the_servers_cap_warns_and_still_fetches_every_row():
    server = _labels_server(cap=2)
    over = r"page_size=100000000 is over the server's limit"
    with Client("http://gagar", "t", transport=server) as client, pytest.warns(match=over):
        rows = client.labels(page_size=100000000)
    assert [r["attempt_id"] for r in rows] == [0, 1, 2, 3, 4]


def test_a_page_size_within_the_cap_does_not_warn():
    server = _labels_server(cap=500)
    with Client("http://gagar", "t", transport=server) as client, warnings.catch_warnings():
        warnings.simplefilter("error")
        assert len(client.labels(page_size=2)) == 5


def test_the_clients_own_validation_shows_values_as_json(tmp_path, capsys):
    step = tmp_path / "step.jsonl"
    step.write_text('null\n{"schema": "gagar.group.v9"}\n')
    assert main([*COMMON, "submit", str(step)]) == 1
    err = capsys.readouterr().err
    assert "line 1: expected an object, found null" in err
    assert 'line 2: schema: expected "gagar.group.v1", found "gagar.group.v9"' in err
    assert "None" not in err and "'gagar" not in err
