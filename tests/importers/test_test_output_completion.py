"""A test output cut on import is completed in place by importing it again under a larger
GAGAR_MAX_TEST_OUTPUT_BYTES: the group keeps its identity (the whole output's digest), so it is
not deleted and re-created (a reviewed group cannot be: its assignments protect it); the stored
attempt's copy is rewritten with more of the output, and the import says so ("completed").
Under the same or a smaller limit nothing is rewritten and the data version stays."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from grading.domain.test_outputs import DEFAULT_MAX_TEST_OUTPUT_BYTES
from grading.models import Attempt, Group
from review.analytics.snapshots import data_fingerprint
from review.models import Assignment, Label
from review.services.campaigns import campaign_create
from review.services.queue import assignment_next
from review.services.reviewing import review_submit
from tests.factories import UserFactory
from tests.importers.helpers import attempt, group, jsonl, traced_memory
from tests.importers.swebench_files import load_rows, write_run_folder, write_tasks
from tests.importers.test_bundle_import import run_import as run_bundle
from tests.importers.test_run_folder_limits import MARKER, long_test_output
from tests.importers.test_run_folders import run_import
from tests.review.helpers import complete_labels

pytestmark = pytest.mark.django_db
KIB = 1024
MIB = 1024 * KIB
# Two systems that both resolve the first shared instance: one group, two passing attempts.
SYSTEMS = (
    "moatless/20240617_moatless_gpt-4o-2024-05-13",
    "moatless/20240623_moatless_claude-3.5-sonnet",
)


def two_systems(shared: Path, root: Path) -> tuple[list[str], Path]:
    """Import arguments for two run folders over one instance, and the first system's
    test_output.txt, made 256 KiB long (a test stuck logging, its failures at the end)."""
    row = load_rows(shared)[0]
    args = ["--tasks", str(write_tasks([row], root / "tasks.jsonl"))]
    outputs = []
    for system in SYSTEMS:
        entries = [(row, c) for c in row["candidates"] if c["system"] == system]
        folder = write_run_folder(root, system, entries)
        args += ["--run-folder", str(folder)]
        outputs.append(folder / "logs" / row["instance_id"] / "test_output.txt")
    outputs[0].write_bytes(long_test_output(outputs[0].read_text(), 256 * KIB))
    return args, outputs[0]


def stored(path: Path) -> Attempt:
    """The attempt imported from a run folder's test_output.txt (named after its system)."""
    system = next(s for s in SYSTEMS if s.split("/", 1)[1] in str(path))
    return Attempt.objects.get(agent_system=system)


def dropped(data: bytes) -> int:
    marker = MARKER.search(data)
    assert marker is not None, data[:200]
    return int(marker.group(1).replace(b",", b""))


def submitted_review(group: Group) -> Assignment:
    reviewer = UserFactory.create(username="alice")
    campaign = campaign_create(name="Cut", created_by=None, reviewers=[reviewer], filters={})
    assignment = assignment_next(campaign=campaign, reviewer=reviewer)
    assert assignment is not None and assignment.group_id == group.pk
    complete_labels(assignment)
    return review_submit(assignment=assignment)


def attempt_writes(queries: CaptureQueriesContext) -> list[str]:
    table = Attempt._meta.db_table
    return [
        q["sql"]
        for q in queries.captured_queries
        if re.match(rf'\s*(UPDATE|INSERT INTO|DELETE FROM) "{table}"', q["sql"])
    ]


def test_a_reviewed_groups_cut_output_is_stored_whole_when_imported_again_under_the_default(
    shared_data, tmp_path, settings, django_capture_on_commit_callbacks
):
    args, path = two_systems(shared_data, tmp_path)
    data = path.read_bytes()
    settings.GAGAR_MAX_TEST_OUTPUT_BYTES = 16 * KIB
    run_import(*args)
    cut = stored(path)
    assert dropped(cut.test_output()) > 0
    group_pk, attempt_pks = cut.group_id, set(Attempt.objects.values_list("pk", flat=True))
    other = Attempt.objects.exclude(pk=cut.pk).get()
    other_output = other.test_output()
    review = submitted_review(Group.objects.get())
    labels = sorted(Label.objects.values_list("candidate__attempt_id", "tier", "rank_in_tier"))
    before = data_fingerprint()

    settings.GAGAR_MAX_TEST_OUTPUT_BYTES = DEFAULT_MAX_TEST_OUTPUT_BYTES
    with django_capture_on_commit_callbacks(execute=True):
        out = run_import(*args)

    completed = stored(path)
    assert completed.test_output() == data  # whole, byte for byte
    assert completed.pk == cut.pk and completed.group_id == group_pk
    assert set(Attempt.objects.values_list("pk", flat=True)) == attempt_pks
    assert Attempt.objects.get(pk=other.pk).test_output() == other_output
    review.refresh_from_db()
    assert review.status == Assignment.Status.SUBMITTED and review.group_id == group_pk
    assert (
        sorted(Label.objects.values_list("candidate__attempt_id", "tier", "rank_in_tier")) == labels
    )
    # The summary counts the group as completed, and a note names the attempt and the file.
    assert "0 groups created, 0 unchanged, 1 completed, 0 replaced, 0 attempts written" in out
    note = next(line for line in out.splitlines() if "stored whole" in line)
    assert str(path) in note and repr(completed.external_id) in note
    assert f"{dropped(cut.test_output()):,} bytes dropped" in note
    assert data_fingerprint() != before

    # Once whole, importing again under any limit changes nothing.
    for limit in (DEFAULT_MAX_TEST_OUTPUT_BYTES, 16 * KIB):
        settings.GAGAR_MAX_TEST_OUTPUT_BYTES = limit
        again = data_fingerprint()
        with django_capture_on_commit_callbacks(execute=True):
            assert "0 groups created, 1 unchanged, 0 replaced" in run_import(*args)
        assert stored(path).test_output() == data and data_fingerprint() == again


@pytest.mark.parametrize("limit", [16 * KIB, 8 * KIB])
def test_importing_a_cut_output_again_under_the_same_or_a_smaller_limit_rewrites_nothing(
    shared_data, tmp_path, settings, django_capture_on_commit_callbacks, limit
):
    args, path = two_systems(shared_data, tmp_path)
    settings.GAGAR_MAX_TEST_OUTPUT_BYTES = 16 * KIB
    run_import(*args)
    cut = stored(path).test_output()
    before = data_fingerprint()

    settings.GAGAR_MAX_TEST_OUTPUT_BYTES = limit
    with (
        CaptureQueriesContext(connection) as queries,
        django_capture_on_commit_callbacks(execute=True),
    ):
        out = run_import(*args)

    assert "0 groups created, 1 unchanged, 0 replaced" in out and "rewritten in place" not in out
    assert attempt_writes(queries) == []
    assert stored(path).test_output() == cut
    assert data_fingerprint() == before


def test_a_larger_limit_that_still_cuts_keeps_more_and_the_next_import_under_it_is_unchanged(
    shared_data, tmp_path, settings, django_capture_on_commit_callbacks
):
    args, path = two_systems(shared_data, tmp_path)
    data = path.read_bytes()
    settings.GAGAR_MAX_TEST_OUTPUT_BYTES = 16 * KIB
    run_import(*args)
    first = dropped(stored(path).test_output())

    settings.GAGAR_MAX_TEST_OUTPUT_BYTES = 64 * KIB
    out = run_import(*args)
    fuller = stored(path).test_output()
    marker = MARKER.search(fuller)
    assert marker is not None
    assert data.startswith(fuller[: marker.start()]) and data.endswith(fuller[marker.end() :])
    assert dropped(fuller) < first
    assert "1 completed" in out
    note = next(line for line in out.splitlines() if "more bytes now" in line)
    assert f"{first - dropped(fuller):,} more bytes now" in note
    assert f"{dropped(fuller):,} still dropped" in note

    before = data_fingerprint()
    with django_capture_on_commit_callbacks(execute=True):
        assert "1 unchanged" in run_import(*args)
    assert stored(path).test_output() == fuller and data_fingerprint() == before


def test_a_cut_output_is_completed_without_reading_the_file_whole(shared_data, tmp_path, settings):
    args, path = two_systems(shared_data, tmp_path)
    header = path.read_bytes()[:200]
    size = 256 * MIB
    last = b"\nFAILED tests/test_loop.py::test_loop_terminates".ljust(99) + b"\n"
    with path.open("r+b") as handle:  # sparse: 256 MiB to read, almost nothing on disk
        handle.truncate(size - len(last))
        handle.seek(size - len(last))
        handle.write(last)
    settings.GAGAR_MAX_TEST_OUTPUT_BYTES = 1 * MIB
    run_import(*args)
    first = dropped(stored(path).test_output())

    settings.GAGAR_MAX_TEST_OUTPUT_BYTES = 2 * MIB
    with traced_memory() as traced:
        out = run_import(*args)
    kept = stored(path).test_output()
    assert "1 completed" in out
    assert kept.startswith(header) and kept.endswith(last) and dropped(kept) < first
    # The kept two megabytes, their compressed copy and the import's own objects; not 256 MiB.
    assert traced.peak < 20 * MIB, traced.peak


def inline_bundle(data: bytes) -> bytes:
    return jsonl(group(attempts=[{**attempt("a1"), "test_output": data.decode()}]))


def test_an_inline_output_sent_cut_is_completed_when_sent_again_under_a_larger_limit(
    settings, django_capture_on_commit_callbacks
):
    data = long_test_output("+ pytest -rA tests\n", 64 * KIB)
    bundle = inline_bundle(data)
    settings.GAGAR_MAX_TEST_OUTPUT_BYTES = 8 * KIB
    run_bundle(bundle)
    cut = Attempt.objects.get()
    assert dropped(cut.test_output()) > 0

    before = data_fingerprint()
    with django_capture_on_commit_callbacks(execute=True):
        same = run_bundle(bundle)
    assert same.count("unchanged") == 1 and Attempt.objects.get().test_output() == cut.test_output()
    assert data_fingerprint() == before

    settings.GAGAR_MAX_TEST_OUTPUT_BYTES = 1 * MIB
    with django_capture_on_commit_callbacks(execute=True):
        report = run_bundle(bundle)
    assert [r.outcome for r in report.results] == ["completed"]
    whole = Attempt.objects.get()
    assert (whole.pk, whole.group_id) == (cut.pk, cut.group_id)
    assert whole.test_output() == data
    assert "bundle.jsonl:1: " in report.summary() and "stored whole" in report.summary()
    assert data_fingerprint() != before


def test_an_inline_output_stored_whole_is_never_cut_by_a_smaller_limit(settings):
    data = long_test_output("+ pytest -rA tests\n", 64 * KIB)
    bundle = inline_bundle(data)
    run_bundle(bundle)
    settings.GAGAR_MAX_TEST_OUTPUT_BYTES = 8 * KIB
    assert run_bundle(bundle).count("unchanged") == 1
    assert Attempt.objects.get().test_output() == data


def test_a_rolled_back_import_says_nothing_was_completed(settings):
    data = long_test_output("+ pytest -rA tests\n", 64 * KIB)
    settings.GAGAR_MAX_TEST_OUTPUT_BYTES = 8 * KIB
    run_bundle(inline_bundle(data))
    cut = Attempt.objects.get().test_output()
    settings.GAGAR_MAX_TEST_OUTPUT_BYTES = 1 * MIB
    bad: dict[str, Any] = group(task_id="t-2")
    bad["attempts"][0]["status"] = "great"
    from grading.services.imports import ImportFailedError

    with pytest.raises(ImportFailedError) as failed:
        run_bundle(inline_bundle(data) + jsonl(bad))
    assert "stored whole" not in failed.value.report.summary()
    assert "completed" not in failed.value.report.summary()
    assert Attempt.objects.get().test_output() == cut
