"""Bad input a QA pass fed the importers, made hostile on purpose: folders given as files,
binary and compressed files, stray non-UTF-8 bytes, JSON `null`, wrong schemas, a truncated
report, a run folder missing one report, a prediction missing fields. Each is refused with one
clear message naming what is wrong, and writes nothing."""

from __future__ import annotations

import gzip
import io
import json
import random
import zipfile
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from grading.domain.jsonfiles import JsonReader
from grading.models import Attempt, Group, Task
from grading.services.imports import ImportFailedError, groups_import
from grading.services.sources import bundle_records
from tests.importers.helpers import PATCH, attempt, group, jsonl
from tests.importers.swebench_files import by_system, load_rows, write_run_folder, write_tasks

pytestmark = pytest.mark.django_db


def refused(data: bytes) -> list[str]:
    _, records = bundle_records(stream=io.BytesIO(data), source="bundle.jsonl", base_dir=None)
    with pytest.raises(ImportFailedError) as info:
        groups_import(records=records, partial=False, replace=False)
    assert Group.objects.count() == 0 and Task.objects.count() == 0
    return [str(p) for p in info.value.report.problems]


def latin1(obj: dict) -> bytes:
    """A group line as a Latin-1 tool writes it: é as the single byte 0xe9."""
    return json.dumps(obj, ensure_ascii=False).encode("latin-1") + b"\n"


def random_bytes(n: int) -> bytes:
    return random.Random(7).randbytes(n)


def zipped(data: bytes) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as z:
        z.writestr("bundle.jsonl", data)
    return out.getvalue()


# --- 1. a folder where a file is expected --------------------------------------------------


def test_a_folder_given_as_the_bundle_says_it_is_a_folder(tmp_path):
    (tmp_path / "step-1.jsonl").write_bytes(jsonl(group()))
    with pytest.raises(CommandError) as info:
        call_command("import", "bundle", str(tmp_path), "--no-progress")
    assert str(info.value) == (
        f"{tmp_path}: is a folder, not a file; give one of the files in it "
        f"(e.g. {tmp_path / 'step-1.jsonl'})"
    )


def test_a_run_folder_given_as_a_bundle_or_reviews_names_the_run_folder_option(tmp_path):
    (tmp_path / "all_preds.jsonl").write_text("")
    (tmp_path / "logs").mkdir()
    hint = f"import swebench --tasks TASKS --run-folder {tmp_path}"
    with pytest.raises(CommandError, match="is a folder, not a file") as info:
        call_command("import", "bundle", str(tmp_path), "--no-progress")
    assert hint in str(info.value)
    with pytest.raises(CommandError, match="is a folder, not a file") as info:
        call_command("import", "reviews", str(tmp_path), "--campaign", "c")
    assert hint in str(info.value)


def test_a_missing_file_is_still_no_such_file(tmp_path):
    with pytest.raises(CommandError, match=r"nope\.jsonl: no such file$"):
        call_command("import", "bundle", str(tmp_path / "nope.jsonl"), "--no-progress")


# --- 2. binary, compressed and non-UTF-8 input ---------------------------------------------

COMPRESSED = {
    "gzip": (gzip.compress, "gzip-compressed data, not JSON text; decompress it first"),
    "zip": (zipped, "a zip archive data, not JSON text; extract the JSON file from it first"),
}


@pytest.mark.parametrize("kind", list(COMPRESSED))
def test_a_compressed_bundle_is_reported_once_as_compressed(kind):
    pack, says = COMPRESSED[kind]
    problems = refused(pack(jsonl(group(), group(task_id="t-2"))))
    assert len(problems) == 1 and says in problems[0], problems


def test_random_bytes_are_one_binary_data_problem_not_one_per_chunk():
    problems = refused(random_bytes(4096))
    assert len(problems) == 1, problems
    assert problems[0].startswith("bundle.jsonl: binary data, not JSON text")
    assert "patch_base64" not in problems[0]


def test_a_latin1_byte_in_text_names_line_offset_and_field_without_the_base64_hint():
    bad = group(task_id="t-2")
    bad["task"]["problem_statement"] = "café is wrong"
    line = latin1(bad)
    problems = refused(jsonl(group()) + line)
    offset = line.index(b"\xe9")
    assert problems == [
        f"bundle.jsonl:2: $.task.problem_statement: not UTF-8: byte 0xe9 at byte {offset} of "
        'the line (0xe9 is "é" in Latin-1/Windows-1252); save the file as UTF-8'
    ]


def test_a_non_utf8_byte_inside_a_patch_suggests_patch_base64():
    bad = group(attempts=[attempt("a1", patch=PATCH.replace("n >= 1", "n >= 1  # é"))])
    problems = refused(latin1(bad))
    assert len(problems) == 1
    assert problems[0].startswith("bundle.jsonl:1: $.attempts[0].patch: not UTF-8: byte 0xe9")
    assert problems[0].endswith("send bytes that are not UTF-8 as patch_base64")


@pytest.mark.parametrize("kind", ["gzip", "random", "latin1"])
def test_swebench_files_say_the_same(tmp_path, kind):
    path = tmp_path / "tasks.jsonl"
    row = {"instance_id": "a__b-1", "problem_statement": "café"}
    path.write_bytes(
        {
            "gzip": gzip.compress(json.dumps(row).encode() + b"\n"),
            "random": random_bytes(4096),
            "latin1": json.dumps(row, ensure_ascii=False).encode("latin-1") + b"\n",
        }[kind]
    )
    with pytest.raises(Exception) as info:
        list(JsonReader().rows(path))
    says = {
        "gzip": f"{path}: gzip-compressed data, not JSON text; decompress it first",
        "random": f"{path}: binary data, not JSON text",
        "latin1": f"{path}:1: $.problem_statement: not UTF-8: byte 0xe9 at byte",
    }[kind]
    assert str(info.value).startswith(says), str(info.value)
    assert "patch_base64" not in str(info.value)


# --- 3. values said as JSON, not as Python's repr -------------------------------------------


@pytest.mark.parametrize(
    ("line", "says"),
    [
        (b"null\n", "bundle.jsonl:1: $: expected an object, found null"),
        (
            jsonl(group(schema="gagar.group.v9")),
            'bundle.jsonl:1: $.schema: expected "gagar.group.v1", found "gagar.group.v9"',
        ),
        (
            jsonl(group(step=True)),
            "bundle.jsonl:1: $.step: expected an integer, found true",
        ),
    ],
)
def test_values_in_messages_are_json_not_python_repr(line, says):
    assert refused(line) == [says]


def test_every_missing_required_property_is_named():
    bad = group()
    del bad["run"], bad["step"]
    assert refused(jsonl(bad)) == ["bundle.jsonl:1: $: required properties missing: run, step"]


# --- 4. a truncated one-line file -----------------------------------------------------------


def test_a_truncated_one_line_report_is_read_as_one_document_that_ends_early(tmp_path):
    path = tmp_path / "report.json"
    whole = json.dumps({"a__b-1": {"resolved": True, "tests_status": {"FAIL_TO_PASS": {}}}})
    path.write_text(whole[: len(whole) // 2])
    with pytest.raises(Exception) as info:
        list(JsonReader().rows(path))
    message = str(info.value)
    assert "read as one JSON document, since line 1 opens a value it does not close" in message
    assert "is the file cut short?" in message
    assert "JSON Lines" not in message


def test_a_broken_first_line_with_more_lines_after_it_is_still_json_lines(tmp_path):
    path = tmp_path / "preds.jsonl"
    path.write_text('{"instance_id": "x",, }\n{"instance_id": "y"}\n')
    with pytest.raises(Exception, match="read as JSON Lines, since line 1 breaks off"):
        list(JsonReader().rows(path))


# --- 5 and 6. run folders and predictions ---------------------------------------------------


@pytest.fixture
def run_folder(shared_data, tmp_path):
    rows = load_rows(shared_data)[:2]
    system = "moatless/20240623_moatless_claude-3.5-sonnet"
    entries = by_system(rows)[system]
    folder = write_run_folder(tmp_path, system, entries, run_level=False)
    tasks = write_tasks(rows, tmp_path / "tasks.jsonl")
    return folder, tasks, entries[0][0]["instance_id"]


def test_a_log_folder_without_its_report_names_the_missing_report_json(run_folder):
    folder, tasks, first = run_folder
    (folder / "logs" / first / "report.json").unlink()
    err = StringIO()
    with pytest.raises(CommandError, match="nothing was written"):
        call_command(
            "import", "swebench", "--tasks", str(tasks), "--run-folder", str(folder),
            "--no-progress", stdout=StringIO(), stderr=err,
        )  # fmt: skip
    expected = folder / "logs" / first / "report.json"
    assert f"{expected} is missing (logs/{first}/ holds patch.diff, test_output.txt)" in (
        err.getvalue()
    )
    assert Attempt.objects.count() == 0


def test_a_prediction_missing_fields_names_every_one(run_folder):
    folder, tasks, first = run_folder
    (folder / "all_preds.jsonl").write_text(json.dumps({"instance_id": first}) + "\n")
    err = StringIO()
    with pytest.raises(CommandError):
        call_command(
            "import", "swebench", "--tasks", str(tasks), "--run-folder", str(folder),
            "--no-progress", stdout=StringIO(), stderr=err,
        )  # fmt: skip
    assert "model_name_or_path is missing; model_patch is missing" in err.getvalue()
    assert Attempt.objects.count() == 0


def test_a_null_model_patch_is_a_prediction_with_nothing_generated(run_folder):
    folder, tasks, _ = run_folder
    lines = (folder / "all_preds.jsonl").read_text().splitlines()
    rows = [json.loads(line) for line in lines]
    for row in rows:
        row["model_patch"] = None
    (folder / "all_preds.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    for report in (folder / "logs").glob("*/report.json"):
        data = json.loads(report.read_text())
        for value in data.values():
            value["resolved"] = False
        report.write_text(json.dumps(data))
    call_command(
        "import", "swebench", "--tasks", str(tasks), "--run-folder", str(folder),
        "--no-progress", stdout=StringIO(), stderr=StringIO(),
    )  # fmt: skip
    assert Attempt.objects.filter(patch=None).count() == len(rows)


def test_the_reader_keeps_path_objects_working(tmp_path: Path):
    # Sanity: a good JSON Lines file still reads as before.
    path = tmp_path / "ok.jsonl"
    path.write_text('{"a": 1}\n{"a": 2}\n')
    assert [r.value for r in JsonReader().rows(path)] == [{"a": 1}, {"a": 2}]
