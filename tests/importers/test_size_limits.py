"""Import files too large to read whole: a JSON Lines line over GAGAR_MAX_LINE_BYTES and a JSON
document over GAGAR_MAX_DOCUMENT_BYTES are refused with their line and the setting, unread and
with nothing written; files under the limits, in the real shapes, still import."""

from __future__ import annotations

import json
import tracemalloc
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from grading.domain.jsonfiles import JsonReader, remove_trailing_commas
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
    assert (
        f"{preds}:3: the line is longer than the {longest + 10} bytes a line may hold (read as "
        "JSON Lines, since line 1 is a complete JSON value); it was not read (the limit is "
        "GAGAR_MAX_LINE_BYTES)"
    ) in err


def test_lines_at_the_limit_import(real, tmp_path, settings):
    preds = all_preds(real, tmp_path / "all_preds.jsonl")
    # The longest line's text exactly: its line break is not counted against it.
    settings.GAGAR_MAX_LINE_BYTES = longest_line(preds, real["tasks"])
    run("--tasks", real["tasks"], "--predictions", str(preds))
    assert Attempt.objects.count() == len(real["entries"])


def test_one_minified_object_over_the_line_limit_is_a_document(real, tmp_path, settings):
    # swe-agent's preds.json keyed by instance, written by `json.dump` without indent: one value
    # on one line, so its size is a document's, not a line's.
    limit = settings.GAGAR_MAX_LINE_BYTES = longest_line(real["tasks"])
    items = {i["instance_id"]: i for i in prediction_array(real)}
    preds = tmp_path / "preds.json"
    text = json.dumps(items)
    preds.write_text(text + " " * (limit - len(text) + 10) + "\n\n")  # trailing blanks too
    assert len(preds.read_bytes()) > limit
    run("--tasks", real["tasks"], "--predictions", str(preds))
    assert Attempt.objects.count() == len(real["entries"])


def test_a_first_line_over_the_limit_with_more_lines_is_refused(real, tmp_path, settings):
    limit = settings.GAGAR_MAX_LINE_BYTES = longest_line(real["tasks"])
    preds = tmp_path / "all_preds.jsonl"
    first = prediction_array(real)[0]
    first["model_patch"] += "+" * limit
    rest = "".join(json.dumps(i) + "\n" for i in prediction_array(real)[1:])
    preds.write_text(json.dumps(first) + "\n" + rest)
    err = refused("--tasks", real["tasks"], "--predictions", str(preds))
    assert (
        f"{preds}:1: the line is longer than the {limit} bytes a line may hold; it was not" in err
    )
    # No line break anywhere and not JSON at all: binary, said once from its first bytes.
    preds.write_bytes(b"\x00garbage" * limit)
    err = refused("--tasks", real["tasks"], "--predictions", str(preds))
    assert f"{preds}: binary data, not JSON text: it holds NUL bytes" in err


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
    assert f"{path}:6: the line is longer than the " in err and "GAGAR_MAX_LINE_BYTES" in err


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
    assert "the line is longer than the 1 MiB a line may hold" in caught.value.problem.message
    assert peak < 4 * KIB * KIB, peak


@pytest.mark.parametrize("start", [b"", b"\n  \n", b'{"a": 1}\n'])
def test_an_overlong_line_is_never_held_in_memory_wherever_it_is(tmp_path, start) -> None:
    # 32 MiB of one line with more rows after it: first, after blank lines, or second.
    path = tmp_path / "huge.jsonl"
    path.write_bytes(start + b'{"b": "' + b"x" * (32 * KIB * KIB) + b'"}\n{"c": 1}\n')
    tracemalloc.start()
    try:
        with pytest.raises(ImportProblemError) as caught:
            list(JsonReader(max_line_bytes=KIB * KIB).rows(path))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert caught.value.problem.line == start.count(b"\n") + 1
    assert peak < 4 * KIB * KIB, peak


def rows_of(path: Path, limit: int) -> list[object]:
    return [row.value for row in JsonReader(max_line_bytes=limit).rows(path)]


@pytest.mark.parametrize(
    ("bom", "newline"),
    [(b"", b"\n"), (b"", b"\r\n"), (b"\xef\xbb\xbf", b"\n"), (b"\xef\xbb\xbf", b"\r\n")],
)
def test_the_limit_counts_a_lines_text_not_its_line_break_or_bom(tmp_path, bom, newline) -> None:
    # Windows tools write CRLF and a BOM: a line of exactly the limit is still within it.
    line = json.dumps({"instance_id": "x" * 40})
    path = tmp_path / "rows.jsonl"
    path.write_bytes(bom + line.encode() + newline + line.encode() + newline)
    assert rows_of(path, len(line)) == [json.loads(line)] * 2
    with pytest.raises(
        ImportProblemError, match=f"the line is longer than the {len(line) - 1} bytes"
    ):
        rows_of(path, len(line) - 1)


def test_a_bom_alone_on_the_first_line_loses_no_rows(tmp_path) -> None:
    path = tmp_path / "rows.jsonl"
    path.write_bytes(b"\xef\xbb\xbf\n" + b'{"a": 1}\n{"a": 2}\n')
    assert rows_of(path, 1000) == [{"a": 1}, {"a": 2}]


def test_an_overlong_blank_line_is_refused_at_its_own_line(tmp_path) -> None:
    path = tmp_path / "rows.jsonl"
    path.write_bytes(b'{"a": 1}\n' + b" " * 2000 + b'\n{"a": 2}\n')
    with pytest.raises(ImportProblemError) as caught:
        rows_of(path, 1000)
    assert caught.value.problem.line == 2


def test_the_installations_reader_uses_the_settings(settings):
    from grading.services.sources import json_reader

    assert json_reader().max_line_bytes == JsonReader().max_line_bytes == 64 * KIB * KIB
    assert json_reader().max_document_bytes == JsonReader().max_document_bytes == 256 * KIB * KIB
    settings.GAGAR_MAX_LINE_BYTES, settings.GAGAR_MAX_DOCUMENT_BYTES = 10, 20
    assert (json_reader().max_line_bytes, json_reader().max_document_bytes) == (10, 20)


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(alphabet=',]}"\\ \nab\u00e9'),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=4), inner, max_size=4)
    ),
    max_leaves=12,
)


def _with_trailing_commas(value: object, draw_comma: st.DrawFn) -> tuple[str, int]:
    """`value` as JSON with a trailing comma (and whitespace) after some last items."""
    if isinstance(value, list | dict):
        items = [
            (json.dumps(k) + ": " if isinstance(value, dict) else "", v)
            for k, v in (value.items() if isinstance(value, dict) else enumerate(value))
        ]
        parts, added = [], 0
        for prefix, v in items:
            text, n = _with_trailing_commas(v, draw_comma)
            parts.append(prefix + text)
            added += n
        comma = bool(items) and draw_comma(st.booleans())
        tail = ("," + draw_comma(st.sampled_from(["", " ", "\n", " \n  "]))) if comma else ""
        opener, closer = ("{", "}") if isinstance(value, dict) else ("[", "]")
        return opener + ",\n".join(parts) + tail + closer, added + comma
    return json.dumps(value), 0


@given(st.data())
@settings(max_examples=200, deadline=None)
def test_lenient_repair_removes_exactly_the_trailing_commas(data) -> None:
    value = data.draw(_JSON)
    text, added = _with_trailing_commas(value, data.draw)
    fixed, lines = remove_trailing_commas(text)
    assert json.loads(fixed) == value
    assert len(lines) == added
    assert remove_trailing_commas(json.dumps(value)) == (json.dumps(value), [])


def test_lenient_repair_of_a_large_document_costs_a_copy_not_an_object_per_character() -> None:
    text = "[" + ",".join(['{"patch": "' + "x" * 1000 + '", "ok": [1, 2,],}'] * 4000) + ",]"
    tracemalloc.start()
    try:
        fixed, lines = remove_trailing_commas(text)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert len(lines) == 2 * 4000 + 1 and len(json.loads(fixed)) == 4000
    assert peak < 3 * len(text), (peak, len(text))


def test_the_reason_names_the_line_that_decided(tmp_path) -> None:
    # A BOM alone on line 1 and a blank line 2: line 3 decides, and the message says so.
    path = tmp_path / "rows.jsonl"
    path.write_bytes(b"\xef\xbb\xbf\n\n" + b'{"a": [}\n')
    with pytest.raises(ImportProblemError, match="since line 3 breaks off before its end"):
        rows_of(path, 1000)
    path.write_bytes(b'\n{"a": [\n1]}\n')
    assert rows_of(path, 1000) == [{"a": [1]}]
    path.write_bytes(b'\n{"a": [\n1}\n')
    with pytest.raises(ImportProblemError, match="since line 2 opens a value it does not close"):
        rows_of(path, 1000)
    # One object on one line over the line limit, broken: read as the document it is.
    path.write_bytes(b'{"a": [' + b"1, " * 100 + b"}\n")
    with pytest.raises(ImportProblemError, match="since the file is one object on line 1"):
        rows_of(path, 100)
