"""A run folder's files that are read whole, made hostile: a `test_output.txt` far over
GAGAR_MAX_TEST_OUTPUT_BYTES is kept as its start and end with a marker saying what was dropped
(read bounded, and the import says so); a `metadata.yaml` that is too large, an alias bomb,
nested too deep, not a mapping or not UTF-8 is refused naming the file, with nothing written."""

from __future__ import annotations

import base64
import os
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from django.core.management.base import CommandError

from grading.domain.run_folders import MAX_METADATA_BYTES
from grading.domain.test_outputs import bounded
from grading.models import Attempt, Group, Task
from tests.importers.helpers import attempt, group, jsonl, traced_memory
from tests.importers.swebench_files import by_system, load_rows, write_run_folder, write_tasks
from tests.importers.test_bundle_import import run_import as run_bundle
from tests.importers.test_run_folders import run_import

pytestmark = pytest.mark.django_db
KIB = 1024
MIB = 1024 * KIB
MARKER = re.compile(
    rb"\n\[\xe2\x80\xa6 ([\d,]+) bytes of test output dropped here: the output is "
    rb"([\d,]+) bytes, "
    rb"over the ([\d,]+) bytes GAGAR_MAX_TEST_OUTPUT_BYTES keeps \(its start and end are kept\) "
    rb"\xe2\x80\xa6\]\n"
)


def one_system(shared: Path, root: Path, count: int = 3) -> tuple[list[str], Path, list[Any]]:
    """The import arguments for one real system's run folder, the folder and its entries."""
    rows = load_rows(shared)[:count]
    system, entries = next(iter(by_system(rows).items()))
    folder = write_run_folder(root, system, entries)
    tasks = write_tasks(rows, root / "tasks.jsonl")
    return ["--tasks", str(tasks), "--run-folder", str(folder)], folder, entries


def long_test_output(header: str, size: int) -> bytes:
    """A pytest run that printed `size` bytes: the harness's header, a flood of log lines,
    then the failures and the short summary at the end, as pytest writes them."""
    flood = b"".join(b"DEBUG polling the queue, attempt %08d\n" % i for i in range(size // 38))
    tail = (
        b"=================================== FAILURES ===================================\n"
        b"___________________________ test_loop_terminates ___________________________\n"
        b"E       AssertionError: the loop never ended\n"
        b"=========================== short test summary info ============================\n"
        b"FAILED tests/test_loop.py::test_loop_terminates - AssertionError\n"
        b">>>>> End Test Output\n"
    )
    return header.encode() + flood + tail


def output_of(entry: tuple[dict[str, Any], dict[str, Any]]) -> bytes:
    return Attempt.objects.get(group__task__external_id=entry[0]["instance_id"]).test_output()


def test_a_test_output_over_the_limit_keeps_its_start_and_end_and_says_so(
    shared_data, tmp_path, settings
):
    args, folder, entries = one_system(shared_data, tmp_path)
    first, second = (folder / "logs" / e[0]["instance_id"] / "test_output.txt" for e in entries[:2])
    data = long_test_output(first.read_text(), 2 * MIB)
    first.write_bytes(data)
    # The second instance's output is exactly at the limit: kept byte for byte, no note.
    limit = settings.GAGAR_MAX_TEST_OUTPUT_BYTES = second.stat().st_size
    assert limit < len(data) // 100

    out = run_import(*args)

    stored = output_of(entries[0])
    marker = MARKER.search(stored)
    assert marker is not None, stored[:200]
    head, tail = stored[: marker.start()], stored[marker.end() :]
    dropped = int(marker.group(1).replace(b",", b""))
    assert data.startswith(head) and data.endswith(tail)
    assert len(head) + dropped + len(tail) == len(data)
    assert int(marker.group(2).replace(b",", b"")) == len(data)
    assert int(marker.group(3).replace(b",", b"")) == limit
    # The harness's header (checkout, git apply) and the failures at the end are both kept,
    # cut on line breaks, within the limit.
    assert head.startswith(b"+ source /opt/miniconda3/bin/activate\n") and head.endswith(b"\n")
    assert b"FAILED tests/test_loop.py::test_loop_terminates" in tail
    assert tail.endswith(b">>>>> End Test Output\n")
    assert limit - 2 * 4096 <= len(head) + len(tail) <= limit
    assert output_of(entries[1]) == second.read_bytes()
    # The import report names the file, its size, what was kept and the setting.
    assert (
        f"note: {first}: the test output is {len(data):,} bytes, over the {limit:,} bytes "
        f"GAGAR_MAX_TEST_OUTPUT_BYTES keeps: a group written from it keeps its first "
        f"{len(head):,} and last {len(tail):,} bytes, with a marker line where {dropped:,} bytes "
        "were dropped; to keep it whole, raise GAGAR_MAX_TEST_OUTPUT_BYTES and import it again "
        "(a group stored cut is completed in place, its reviews and grades kept)"
    ) in out
    assert str(second) not in out
    assert Attempt.objects.count() == len(entries)


def test_the_limit_is_storage_not_identity_so_importing_again_is_unchanged(
    shared_data, tmp_path, settings
):
    """The file the harness wrote is the attempt's identity; the limit only says how much of it
    is stored. So the same folder imported again, under any limit, is the same group: an import
    of many groups never fails over one output stored whole before or cut under another limit
    (a cut one is completed in place under a larger limit: test_test_output_completion)."""
    args, folder, entries = one_system(shared_data, tmp_path)
    output = folder / "logs" / entries[0][0]["instance_id"] / "test_output.txt"
    data = long_test_output(output.read_text(), 256 * KIB)
    output.write_bytes(data)
    settings.GAGAR_MAX_TEST_OUTPUT_BYTES = len(data)
    run_import(*args)
    assert output_of(entries[0]) == data  # stored whole (as every output was before the limit)

    settings.GAGAR_MAX_TEST_OUTPUT_BYTES = 16 * KIB
    out = run_import(*args)
    assert f"{len(entries)} unchanged" in out
    assert output_of(entries[0]) == data  # the whole copy is kept
    # A new group cut under the smaller limit is the same group when the limit is raised again:
    # its output is completed, nothing is replaced.
    output.write_bytes(data + b"one more line\n")
    run_import(*args, "--replace")
    cut = Attempt.objects.get(group__task__external_id=entries[0][0]["instance_id"])
    assert MARKER.search(cut.test_output()) is not None
    settings.GAGAR_MAX_TEST_OUTPUT_BYTES = 2 * len(data)
    out = run_import(*args)
    assert f"{len(entries) - 1} unchanged, 1 completed, 0 replaced" in out
    whole = Attempt.objects.get(group__task__external_id=entries[0][0]["instance_id"])
    assert (whole.pk, whole.test_output()) == (cut.pk, data + b"one more line\n")


def test_a_huge_test_output_is_never_read_whole(shared_data, tmp_path, settings):
    args, folder, entries = one_system(shared_data, tmp_path, count=1)
    output = folder / "logs" / entries[0][0]["instance_id"] / "test_output.txt"
    header = output.read_bytes()
    size = 256 * MIB
    # Sparse: 256 MiB to read, almost nothing on disk.
    last = b"\nFAILED tests/test_loop.py::test_loop_terminates".ljust(99) + b"\n"
    with output.open("r+b") as handle:
        handle.truncate(size - len(last))
        handle.seek(size - len(last))
        handle.write(last)
    settings.GAGAR_MAX_TEST_OUTPUT_BYTES = 1 * MIB
    with traced_memory() as traced:
        out = run_import(*args)
    stored = output_of(entries[0])
    assert stored.startswith(header) and stored.endswith(last)
    assert f"the test output is {size:,} bytes" in out
    # The kept megabyte, its compressed copy and the import's own objects; not 256 MiB.
    assert traced.peak < 16 * MIB, traced.peak


def test_the_limit_must_be_positive(tmp_path):
    from tests.conftest import PROJECT_ROOT

    env = {
        **os.environ,
        "DEBUG": "1",
        "GAGAR_MAX_TEST_OUTPUT_BYTES": "0",
        "GAGAR_VAR_DIR": str(tmp_path),
    }
    result = subprocess.run(
        [sys.executable, "manage.py", "check"],
        cwd=PROJECT_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode != 0
    assert "GAGAR_MAX_TEST_OUTPUT_BYTES=0: must be at least 1" in result.stderr


def billion_laughs() -> str:
    """Nine levels of nine aliases each: 9**9 (387 million) strings from 400 bytes."""
    lines = ['l0: &l0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    for level in range(1, 10):
        lines.append(f"l{level}: &l{level} [" + ", ".join([f"*l{level - 1}"] * 9) + "]")
    return "\n".join(lines) + "\n"


HEAD = "info:\n  name: SWE-agent\n  site: https://example.org/\n"
# Each: the metadata.yaml's bytes, then what the refusal says after the file's path.
HOSTILE = {
    "alias bomb beside a good name": (
        (HEAD + "tags:\n" + "".join("  " + x for x in billion_laughs().splitlines(True))).encode(),
        ":6: an alias (*l0): aliases are not allowed in metadata.yaml",
    ),
    "alias bomb as the name": (
        (billion_laughs() + "info:\n  name: *l9\n").encode(),
        ":2: an alias (*l0): aliases are not allowed in metadata.yaml",
    ),
    # PyYAML's scanner is quadratic in bracket depth: unchecked, this file takes minutes.
    "brackets nested 30,000 deep": (
        (HEAD + "tags: " + "[" * 30_000 + "]" * 30_000 + "\n").encode(),
        ":4: not valid YAML: nested deeper than 32 levels",
    ),
    "a block list nested 5,000 deep": (
        (HEAD + "tags:\n" + "- " * 5000 + "x\n").encode(),
        ": not valid YAML: nested too deep",
    ),
    "over the size limit": (
        (HEAD + "# padding\n" * (MAX_METADATA_BYTES // 10)).encode(),
        f": {len(HEAD) + MAX_METADATA_BYTES // 10 * 10:,} bytes, over the "
        f"{MAX_METADATA_BYTES:,} a metadata file may hold",
    ),
    "not a mapping": (
        b"- info\n- name\n",
        ":1: expected a mapping (info: {name: \u2026}), not a list",
    ),
    "a bare string": (
        b"SWE-agent\n",
        ":1: expected a mapping (info: {name: \u2026}), not a string",
    ),
    "a date that is no date": (
        (HEAD + "date: 2024-02-30\n").encode(),
        ": not valid YAML: day is out of range for month",
    ),
    "not UTF-8 on line 3": (
        HEAD.encode().replace(b"example", b"caf\xe9"),
        ":3: not UTF-8 text: 'utf-8' codec can't decode byte 0xe9",
    ),
}


@pytest.mark.parametrize("case", list(HOSTILE))
def test_a_hostile_metadata_file_is_refused_naming_it_and_nothing_is_written(
    shared_data, tmp_path, case
):
    args, folder, _ = one_system(shared_data, tmp_path, count=2)
    content, says = HOSTILE[case]
    meta = folder / "metadata.yaml"
    meta.write_bytes(content)
    started = time.monotonic()
    with traced_memory() as traced, pytest.raises(CommandError) as refused:
        run_import(*args)
    assert str(refused.value).startswith(f"{meta}{says}"), str(refused.value)
    assert str(refused.value).endswith("; nothing was written")
    assert Group.objects.count() == Task.objects.count() == Attempt.objects.count() == 0
    assert traced.peak < 8 * MIB and time.monotonic() - started < 10, (traced.peak, case)


def test_a_huge_metadata_file_is_refused_unread(shared_data, tmp_path):
    args, folder, _ = one_system(shared_data, tmp_path, count=2)
    meta = folder / "metadata.yaml"
    size = 64 * MIB
    with meta.open("r+b") as handle:  # sparse: the padding is not on disk
        handle.truncate(size)
    with traced_memory() as traced, pytest.raises(CommandError) as refused:
        run_import(*args)
    assert str(refused.value).startswith(
        f"{meta}: {size:,} bytes, over the {MAX_METADATA_BYTES:,} a metadata file may hold"
    )
    assert "it was not read" in str(refused.value)
    assert Group.objects.count() == 0
    assert traced.peak < 4 * MIB, traced.peak


@pytest.mark.parametrize("field", ["test_output", "test_output_base64"])
def test_a_bundles_inline_test_output_over_the_limit_is_cut_as_a_file_is(field, settings):
    data = long_test_output("+ pytest -rA tests\n", 64 * 1024)
    value = data.decode() if field == "test_output" else base64.b64encode(data).decode()
    sent = attempt("a1")
    del sent["test_output"]
    bundle = group(attempts=[{**sent, field: value}])
    limit = settings.GAGAR_MAX_TEST_OUTPUT_BYTES = 8 * 1024
    run_bundle(jsonl(bundle))
    stored = Attempt.objects.get().test_output()
    marker = MARKER.search(stored)
    assert marker is not None, stored[:200]
    head, tail = stored[: marker.start()], stored[marker.end() :]
    dropped = int(marker.group(1).replace(b",", b""))
    assert data.startswith(head) and data.endswith(tail) and head.endswith(b"\n")
    assert len(head) + dropped + len(tail) == len(data)
    assert int(marker.group(3).replace(b",", b"")) == limit
    assert b"FAILED tests/test_loop.py::test_loop_terminates" in tail
    assert len(head) + len(tail) <= limit


def test_an_inline_output_cut_or_not_is_the_same_group_under_any_limit(settings):
    data = long_test_output("+ pytest -rA tests\n", 64 * 1024)
    bundle = jsonl(group(attempts=[{**attempt("a1"), "test_output": data.decode()}]))
    settings.GAGAR_MAX_TEST_OUTPUT_BYTES = 8 * 1024
    first = run_bundle(bundle)
    settings.GAGAR_MAX_TEST_OUTPUT_BYTES = 1024 * 1024
    again = run_bundle(bundle)
    # The same group (no conflict, nothing replaced); its cut output is completed in place.
    assert [r.outcome for r in again.results] == ["completed"]
    assert again.results[0].group_id == first.results[0].group_id


@pytest.mark.parametrize("limit", range(9990, 10010))
def test_a_cut_without_a_line_break_near_never_splits_a_character(limit):
    data = ("é" * 20000 + "€𝄞" * 3000).encode()  # 2-, 3- and 4-byte characters, no line break
    kept = bounded(data, limit).data
    kept.decode("utf-8")  # strict: a split character raises
    assert len(kept) < limit + 300
