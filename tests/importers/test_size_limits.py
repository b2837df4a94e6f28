"""Import files too large to read whole: a JSON Lines line over GAGAR_MAX_LINE_BYTES and a JSON
document over GAGAR_MAX_DOCUMENT_BYTES are refused with their line and the setting, unread and
with nothing written; files under the limits, in the real shapes, still import."""

from __future__ import annotations

import json
import tracemalloc
from pathlib import Path
from typing import Any

import pytest

from grading.domain.jsonfiles import JsonReader
from grading.domain.records import ImportProblemError
from grading.models import Attempt
from tests.importers.test_harness_shapes import all_preds, refused, run
from tests.review.test_review_import import import_groups
from tests.review.test_review_import import refused as reviews_refused

pytestmark = pytest.mark.django_db
KIB = 1024


def prediction_array(real: dict[str, Any]) -> list[dict[str, str]]:
    return [
        {"instance_id": r["instance_id"], "model_name_or_path": c["model_name_or_path"],
         "model_patch": c["patch"]}
        for r, c in real["entries"]
    ]  # fmt: skip


def longest_line(*paths: str | Path) -> int:
    return max(len(x) for p in paths for x in Path(p).read_bytes().splitlines())


def test_a_prediction_line_over_the_limit_is_refused_with_its_line(real, tmp_path, settings):
    preds = all_preds(real, tmp_path / "all_preds.jsonl")
    lines = preds.read_text().splitlines()
    longest = longest_line(preds, real["tasks"])
    settings.GAGAR_MAX_LINE_BYTES = longest + 10
    row = json.loads(lines[2])
    row["model_patch"] += "\n" + "+" * (longest + 100)  # only the third line grows past it
    lines[2] = json.dumps(row)
    preds.write_text("\n".join(lines) + "\n")
    err = refused("--tasks", real["tasks"], "--predictions", str(preds))
    assert f"{preds}:3: line 3 is longer than the {longest + 10} bytes one line may hold" in err
    assert "(read as JSON Lines, since line 1 is a complete JSON value)" in err
    assert "GAGAR_MAX_LINE_BYTES" in err


def test_lines_at_the_limit_import(real, tmp_path, settings):
    preds = all_preds(real, tmp_path / "all_preds.jsonl")
    # The longest line's text exactly: its line break is not counted against it.
    settings.GAGAR_MAX_LINE_BYTES = longest_line(preds, real["tasks"])
    run("--tasks", real["tasks"], "--predictions", str(preds))
    assert Attempt.objects.count() == len(real["entries"])


def test_a_first_line_over_the_limit_is_refused_whatever_it_is(real, tmp_path, settings):
    limit = settings.GAGAR_MAX_LINE_BYTES = longest_line(real["tasks"])
    preds = tmp_path / "preds.json"
    # A minified object on one line (a keyed preds.json written without indent) over the limit.
    items = {i["instance_id"]: i for i in prediction_array(real) * 4}
    items["padding"] = {"model_patch": "+" * limit}
    preds.write_text(json.dumps(items))
    assert len(preds.read_bytes()) > limit
    err = refused("--tasks", real["tasks"], "--predictions", str(preds))
    assert (
        f"{preds}:1: line 1 is longer than the {limit} bytes one line may hold; it was not read"
        in err
    )
    # No line break anywhere, not JSON at all: the same, and the rest is never read.
    preds.write_bytes(b"\x00garbage" * limit)
    err = refused("--tasks", real["tasks"], "--predictions", str(preds))
    assert f"{preds}:1: line 1 is longer than" in err


def test_a_minified_array_is_a_document_and_only_the_document_limit_applies(
    real, tmp_path, settings
):
    # Both files are documents (the tasks an indented array, the predictions one minified line),
    # so a line limit far below their lines' lengths does not apply to either.
    tasks = tmp_path / "tasks.json"
    rows = [json.loads(x) for x in Path(real["tasks"]).read_text().splitlines()]
    tasks.write_text(json.dumps(rows, indent=2))
    preds = tmp_path / "predictions.json"
    preds.write_text(json.dumps(prediction_array(real)))  # one line
    settings.GAGAR_MAX_LINE_BYTES = 1 * KIB
    assert preds.stat().st_size > settings.GAGAR_MAX_LINE_BYTES
    run("--tasks", str(tasks), "--predictions", str(preds))
    assert Attempt.objects.count() == len(real["entries"])


def test_a_document_over_its_limit_is_refused_unread(real, tmp_path, settings):
    preds = tmp_path / "predictions_for_swebench.json"
    preds.write_text(json.dumps(prediction_array(real), indent=4))  # ACR's indented array
    size = preds.stat().st_size
    settings.GAGAR_MAX_DOCUMENT_BYTES = size - 1
    err = refused("--tasks", real["tasks"], "--predictions", str(preds))
    assert f"{preds}: the file is {size} bytes, over the {size - 1} bytes one JSON document" in err
    assert "Write it as JSON Lines" in err and "GAGAR_MAX_DOCUMENT_BYTES" in err
    settings.GAGAR_MAX_DOCUMENT_BYTES = size
    run("--tasks", real["tasks"], "--predictions", str(preds))
    assert Attempt.objects.count() == len(real["entries"])


def test_an_indented_report_over_the_document_limit_is_refused(real, tmp_path, settings):
    preds = all_preds(real, tmp_path / "all_preds.jsonl")
    report = tmp_path / "report.json"
    report.write_text(json.dumps({"resolved": real["resolved"]}, indent=4))
    settings.GAGAR_MAX_DOCUMENT_BYTES = 16
    err = refused("--tasks", real["tasks"], "--predictions", str(preds), "--report", str(report))
    assert f"{report}: the file is " in err and "over the 16 bytes one JSON document" in err


def test_a_reviews_line_over_the_limit_is_refused_and_nothing_is_written(
    shared_data, tmp_path, settings
):
    import_groups(shared_data, tmp_path)
    lines = (shared_data / "reviews" / "rater-1.jsonl").read_text().splitlines()
    settings.GAGAR_MAX_LINE_BYTES = max(len(x.encode()) for x in lines)
    review = json.loads(lines[5])
    review["candidates"][0]["notes"] = "x" * settings.GAGAR_MAX_LINE_BYTES
    lines[5] = json.dumps(review)
    path = tmp_path / "rater-1.jsonl"
    path.write_text("\n".join(lines) + "\n")
    err = reviews_refused(path, "--campaign", "experts")
    assert f"{path}:6: line 6 is longer than the " in err and "GAGAR_MAX_LINE_BYTES" in err


def test_the_reader_does_not_hold_an_overlong_line_in_memory(tmp_path):
    # 32 MiB in one line, read with a 1 MiB limit: the reader stops after the limit.
    path = tmp_path / "huge.jsonl"
    path.write_bytes(b'{"a": 1}\n{"b": "' + b"x" * (32 * KIB * KIB) + b'"}\n')
    reader = JsonReader(max_line_bytes=KIB * KIB)
    tracemalloc.start()
    try:
        with pytest.raises(ImportProblemError) as caught:
            list(reader.rows(path))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert caught.value.problem.line == 2
    assert "line 2 is longer than the 1 MiB one line may hold" in caught.value.problem.message
    assert peak < 4 * KIB * KIB, peak


def test_the_installations_reader_uses_the_settings(settings):
    from grading.services.sources import json_reader

    assert json_reader().max_line_bytes == JsonReader().max_line_bytes == 64 * KIB * KIB
    assert json_reader().max_document_bytes == JsonReader().max_document_bytes == 512 * KIB * KIB
    settings.GAGAR_MAX_LINE_BYTES, settings.GAGAR_MAX_DOCUMENT_BYTES = 10, 20
    assert (json_reader().max_line_bytes, json_reader().max_document_bytes) == (10, 20)
