import base64
import json
from io import BytesIO
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from grading.models import Attempt, Group, Patch, PatchFile, Task, Trajectory
from grading.sample.build import GROUP_FILE
from grading.selectors.rollouts import trajectory_events
from grading.services.demo import sample_load
from grading.services.imports import ImportFailedError, groups_import
from grading.services.sources import bundle_records
from tests.importers.helpers import PATCH, attempt, group, jsonl

pytestmark = pytest.mark.django_db


def run_import(data: bytes, *, base_dir: Path | None = None, partial=False, replace=False):
    _, records = bundle_records(stream=BytesIO(data), source="bundle.jsonl", base_dir=base_dir)
    return groups_import(records=records, partial=partial, replace=replace)


def failed_import(data: bytes, **kwargs) -> list[str]:
    with pytest.raises(ImportFailedError) as info:
        run_import(data, **kwargs)
    return [str(p) for p in info.value.report.problems]


def test_it_imports_a_group_with_attempts_patches_and_trajectories():
    report = run_import(jsonl(group()))
    assert report.count("created") == 1
    g = Group.objects.get()
    assert (g.step.run.name, g.step.number, g.task.external_id) == ("run-1", 0, "t-1")
    a1, a2 = g.attempts.order_by("index")
    assert a1.patch is not None and bytes(a1.patch.content) == PATCH.encode()
    assert (a1.patch.files_changed, a1.patch.lines_added, a1.patch.lines_removed) == (1, 1, 1)
    assert a2.patch is None and a2.test_reward == 0.0
    assert a1.test_output() == b"1 passed\n"
    events = trajectory_events(trajectory=a1.trajectory, start=0, count=10)
    assert [e["kind"] for e in events] == ["thought", "action", "observation"]
    assert events[1]["args"] == "cat pkg/sizes.py"


def test_reimporting_identical_content_is_a_no_op():
    run_import(jsonl(group()))
    report = run_import(jsonl(group()))
    assert report.count("unchanged") == 1 and report.attempts_created == 0
    assert Group.objects.count() == 1 and Attempt.objects.count() == 2


def test_conflicting_content_is_an_error_unless_replace_is_asked_for():
    run_import(jsonl(group()))
    changed = group(attempts=[attempt("a1", test_reward=0.0)])
    problems = failed_import(jsonl(changed))
    assert "already exists with different content" in problems[0]
    # It names the way to overwrite on both the command line and the API.
    assert "--replace" in problems[0] and "replace=true" in problems[0]
    assert Attempt.objects.filter(test_reward=1.0).count() == 1  # old content kept

    report = run_import(jsonl(changed), replace=True)
    assert report.count("replaced") == 1
    assert list(Attempt.objects.values_list("test_reward", flat=True)) == [0.0]


def test_a_file_is_all_or_nothing_and_every_problem_is_reported():
    bad_schema = group(task_id="t-2")
    del bad_schema["attempts"][0]["test_reward"]
    data = jsonl(group(task_id="t-1")) + b"{not json\n" + jsonl(bad_schema)
    problems = failed_import(data)
    assert problems[0].startswith("bundle.jsonl:2: malformed JSON")
    assert problems[1].startswith(
        "bundle.jsonl:3: $.attempts[0]: required property missing: test_reward"
    )
    assert Group.objects.count() == 0 and Task.objects.count() == 0 and Patch.objects.count() == 0


def test_a_line_cut_off_mid_value_is_reported_at_its_own_end():
    cut = b'{"schema": "gagar.group.v1", "task": \n'
    crlf = b'{"schema": "gagar.group.v1", "run": "r"\r\n'
    problems = failed_import(jsonl(group(task_id="t-1")) + cut + crlf)
    assert problems[0] == f"bundle.jsonl:2: malformed JSON: Expecting value at column {len(cut)}"
    assert problems[1] == (
        f"bundle.jsonl:3: malformed JSON: Expecting ',' delimiter at column {len(crlf) - 1}"
    )


def test_partial_import_keeps_the_valid_groups_and_reports_the_rest():
    data = jsonl(group(task_id="t-1")) + b"[1, 2\n" + jsonl(group(task_id="t-3"))
    report = run_import(data, partial=True)
    assert report.count("created") == 2
    assert [p.line for p in report.problems] == [2]


@pytest.mark.parametrize(
    ("mutate", "expected"),
    [
        (lambda g: g["attempts"][0].update(status="passed"), "$.attempts[0].status"),
        (lambda g: g["attempts"][0].update(test_reward=2), "$.attempts[0].test_reward"),
        (lambda g: g.pop("run"), "$: required property missing: run"),
        (
            lambda g: g["task"].pop("problem_statement"),
            "$.task: required property missing: problem_statement",
        ),
        (lambda g: g.update(schema="gagar.group.v2"), "$.schema"),
        (lambda g: g["attempts"][1].update(id="a1"), '$.attempts[1].id: duplicate attempt id "a1"'),
        (
            lambda g: g["attempts"][0].update(patch="this is not a diff\n"),
            "$.attempts[0].patch: not a unified diff",
        ),
        (
            lambda g: g["attempts"][0].update(
                patch=PATCH.replace("@@ -1,3 +1,3 @@", "@@ -1,9 +1,9 @@")
            ),
            "$.attempts[0].patch: not a unified diff unidiff can read",
        ),
        (lambda g: g["task"].update(problem_statement="a\x00b"), "$.task.problem_statement: NUL"),
        (
            lambda g: g["attempts"][0]["trajectory"].update(format="gpt-log"),
            "$.attempts[0].trajectory.format",
        ),
        (
            lambda g: g["attempts"][0]["trajectory"]["events"].append({"kind": "dance"}),
            "$.attempts[0].trajectory",
        ),
        (lambda g: g["attempts"][0].update(patch_base64="!!!"), "patch or patch_base64"),
        (
            lambda g: (g["attempts"][0].pop("patch"), g["attempts"][0].update(patch_base64="!!!")),
            "$.attempts[0].patch_base64: invalid base64",
        ),
        (lambda g: g.update(task_id="t-1"), "either task"),
    ],
)
def test_bad_input_names_line_and_field(mutate, expected):
    bad = group()
    mutate(bad)
    problems = failed_import(jsonl(group(task_id="ok")) + jsonl(bad))
    assert len(problems) == 1
    assert problems[0].startswith("bundle.jsonl:2: ")
    assert expected in problems[0]
    assert Group.objects.count() == 0


def test_a_group_twice_in_one_file_is_refused_naming_both_lines():
    # The same line twice was counted twice ("1 created, 1 unchanged", double the attempts).
    problems = failed_import(jsonl(group(), group(task_id="t-2"), group()))
    assert problems == [
        'bundle.jsonl:3: $.task.id: task "t-1" in "run-1" step 0 has a group on line 1 '
        "already: one group per task and step"
    ]
    assert Group.objects.count() == 0


def test_a_changed_second_copy_of_a_group_is_not_called_an_existing_group():
    changed = group(attempts=[attempt("a1", test_reward=0.0)])
    problems = failed_import(jsonl(group(), changed))
    assert len(problems) == 1 and "has a group on line 1 already" in problems[0]
    assert "already exists" not in problems[0]


def test_partial_skips_the_second_copy_and_counts_the_group_once():
    report = run_import(jsonl(group(), group()), partial=True)
    assert report.count("created") == 1 and report.count("unchanged") == 0
    assert report.attempts_read == 2 and [p.line for p in report.problems] == [2]


def test_non_utf8_bytes_in_a_line_are_a_clear_error():
    problems = failed_import(jsonl(group()).replace(b"f(1) is wrong", b"f(1) is \xff wrong"))
    assert "bundle.jsonl:1: $.task.problem_statement: not UTF-8: byte 0xff" in problems[0]


def test_unknown_format_is_refused():
    problems = failed_import(b'{"schema": "swe-bench.predictions", "instance_id": "x"}\n')
    assert "bundle.jsonl:1:" in problems[0]


def test_patches_with_nul_and_invalid_utf8_are_stored_byte_for_byte():
    raw = PATCH.encode().replace(b"return n >= 1", b"return n >= 1  # \x00\xff\xfe")
    record = attempt("a1", patch_base64=base64.b64encode(raw).decode())
    del record["patch"]
    run_import(jsonl(group(attempts=[record])))
    stored = Patch.objects.get()
    assert bytes(stored.content) == raw
    assert stored.lines_added == 1


def test_nul_inside_a_text_patch_is_kept():
    text = PATCH.replace("return n >= 1", "return n >= 1  # \x00")
    run_import(jsonl(group(attempts=[attempt("a1", patch=text)])))
    assert b"\x00" in bytes(Patch.objects.get().content)


def test_crlf_patches_and_lines_are_kept_exactly():
    crlf = PATCH.replace("\n", "\r\n")
    data = jsonl(group(attempts=[attempt("a1", patch=crlf)])).replace(b"\n", b"\r\n")
    run_import(data)
    patch = Patch.objects.get()
    assert bytes(patch.content) == crlf.encode()
    assert PatchFile.objects.get().target_path == "pkg/sizes.py"


def test_binary_and_renamed_files_are_recognised():
    diff = (
        "diff --git a/logo.png b/logo.png\nnew file mode 100644\nindex 0000000..e69de29\n"
        "Binary files /dev/null and b/logo.png differ\n"
        "diff --git a/old.py b/tests/new_test.py\nsimilarity index 90%\nrename from old.py\n"
        "rename to tests/new_test.py\n--- a/old.py\n+++ b/tests/new_test.py\n@@ -1 +1 @@\n-x\n+y\n"
    )
    run_import(jsonl(group(attempts=[attempt("a1", patch=diff)])))
    files = list(PatchFile.objects.order_by("index").values_list("change", "is_binary", "is_test"))
    assert files == [("added", True, False), ("renamed", False, True)]
    patch = Patch.objects.get()
    assert patch.has_binary and patch.touches_tests


def test_the_same_patch_is_stored_once():
    run_import(jsonl(group(task_id="t-1"), group(task_id="t-2")))
    assert Patch.objects.count() == 1
    assert Attempt.objects.filter(patch__isnull=False).count() == 2


def test_groups_can_refer_to_an_existing_task_by_id():
    run_import(jsonl(group(task_id="t-1", step=0)))
    later = group(step=1)
    del later["task"]
    later["task_id"] = "t-1"
    run_import(jsonl(later))
    assert Group.objects.filter(task__external_id="t-1").count() == 2
    unknown = dict(later, task_id="t-404", step=2)
    assert 'unknown task "t-404"' in failed_import(jsonl(unknown))[0]


def test_a_sidecar_trajectory_streams_from_a_file(tmp_path):
    traj = {
        "trajectory": [
            {"thought": "t", "action": "ls\n", "observation": "a.py", "response": "", "state": "{}"}
        ]
        * 3,
        "history": [],
        "info": {"exit_status": "submitted"},
    }
    (tmp_path / "trajs").mkdir()
    (tmp_path / "trajs" / "a1.traj").write_text(json.dumps(traj))
    line = group(
        attempts=[attempt("a1", trajectory={"format": "swe-agent", "path": "trajs/a1.traj"})]
    )
    run_import(jsonl(line), base_dir=tmp_path)
    trajectory = Trajectory.objects.get()
    assert trajectory.format == "swe-agent" and trajectory.event_count >= 9


@pytest.mark.parametrize(
    "path", ["../secret.traj", "/etc/passwd", "trajs/link.traj", "missing.traj"]
)
def test_sidecar_paths_cannot_leave_the_bundle_folder(tmp_path, path):
    (tmp_path / "trajs").mkdir()
    (tmp_path.parent / "secret.traj").write_text("[]")
    (tmp_path / "trajs" / "link.traj").symlink_to("/etc/passwd")
    line = group(attempts=[attempt("a1", trajectory={"format": "chat", "path": path})])
    problems = failed_import(jsonl(line), base_dir=tmp_path)
    assert "$.attempts[0].trajectory.path" in problems[0]


def test_sidecars_are_refused_when_there_is_no_folder():
    line = group(attempts=[attempt("a1", trajectory={"format": "chat", "path": "x.json"})])
    assert "sidecar files are not accepted here" in failed_import(jsonl(line))[0]


def test_a_line_over_the_size_limit_is_refused_without_reading_it_whole(settings):
    settings.GAGAR_MAX_LINE_BYTES = 10_000
    big = group(task_id="big", attempts=[attempt("a1", test_output="x" * 20_000)])
    problems = failed_import(jsonl(group(task_id="ok"), big, group(task_id="ok2")))
    assert len(problems) == 1 and problems[0].startswith("bundle.jsonl:2: line is longer")


def test_a_bom_and_crlf_line_breaks_as_windows_tools_write_them_import(settings):
    lines = [json.dumps(group(task_id=t)).encode() for t in ("w1", "w22")]
    settings.GAGAR_MAX_LINE_BYTES = max(len(x) for x in lines)  # the text, not its CRLF or BOM
    report = run_import(b"\xef\xbb\xbf" + b"".join(x + b"\r\n" for x in lines))
    assert report.count("created") == 2
    settings.GAGAR_MAX_LINE_BYTES -= 1
    (problem,) = failed_import(b"\xef\xbb\xbf" + b"".join(x + b"\r\n" for x in lines[::-1]))
    assert "line is longer than" in problem and "GAGAR_MAX_LINE_BYTES" in problem


def test_the_command_prints_a_summary_and_fails_loudly(tmp_path, capsys):
    good = tmp_path / "good.jsonl"
    good.write_bytes(jsonl(group()))
    call_command("import", "bundle", str(good), "--no-progress")
    assert "1 group created" in capsys.readouterr().out

    bad = tmp_path / "bad.jsonl"
    bad.write_bytes(jsonl(group(task_id="x")) + b"nope\n")
    with pytest.raises(CommandError, match="nothing was written"):
        call_command("import", "bundle", str(bad), "--no-progress")
    assert f"{bad}:2: malformed JSON" in capsys.readouterr().err
    assert not Task.objects.filter(external_id="x").exists()

    with pytest.raises(CommandError, match="no such file"):
        call_command("import", "bundle", str(tmp_path / "nope.jsonl"))


def test_the_sample_file_imported_again_after_the_demo_is_a_no_op(capsys):
    # `./dev up` imports the sample with the local clone as its repository; the committed
    # file names none. The same task, so importing the file again changes nothing.
    sample_load(grade=False)
    task = Task.objects.get()
    where, content = task.repo_url, task.content_hash
    assert where
    call_command("import", "bundle", str(GROUP_FILE), "--no-progress")
    assert (
        "0 groups created, 1 unchanged, 0 replaced, 0 attempts written" in capsys.readouterr().out
    )
    task.refresh_from_db()
    assert (task.repo_url, task.content_hash) == (where, content)
    # A task that differs in anything else is still a conflict.
    record = json.loads(GROUP_FILE.read_text())
    record["task"]["problem_statement"] += " (edited)"
    assert "already exists with different content" in " ".join(failed_import(jsonl(record)))


@pytest.mark.slow
def test_a_200_mb_sidecar_trajectory_imports_with_bounded_memory(tmp_path):
    import tracemalloc

    step = {
        "thought": "t" * 2000,
        "action": "cat a.py\n",
        "observation": "x = 1\n" * 500,
        "response": "",
        "state": "{}",
    }
    encoded = json.dumps(step)
    count = 0
    with (tmp_path / "big.traj").open("w") as handle:
        handle.write('{"environment": "swe_main", "trajectory": [')
        while handle.tell() < 200_000_000:
            handle.write(("," if count else "") + encoded)
            count += 1
        handle.write('], "history": [], "info": {"exit_status": "submitted"}}')
    line = group(attempts=[attempt("a1", trajectory={"format": "swe-agent", "path": "big.traj"})])

    tracemalloc.start()
    run_import(jsonl(line), base_dir=tmp_path)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()

    trajectory = Trajectory.objects.get()
    assert trajectory.raw_size > 200_000_000
    # Three events a step, plus the footer with the exit status (the history is empty).
    assert trajectory.event_count == 3 * count + 1
    assert peak < 64 * 1024 * 1024, f"peak {peak / 1e6:.0f} MB while importing a 200 MB file"
    last = trajectory_events(trajectory=trajectory, start=trajectory.event_count - 3, count=3)
    assert [e["index"] for e in last] == [3 * count - 2, 3 * count - 1, 3 * count]
    assert [e["kind"] for e in last] == ["action", "observation", "message"]


def test_the_summary_counts_one_problem_in_the_singular():
    with pytest.raises(ImportFailedError) as info:
        run_import(jsonl(group()).replace(b"f(1) is wrong", b"f(1) is \xff wrong"))
    assert len(info.value.report.problems) == 1
    assert "nothing written (1 problem; the file is all-or-nothing)" in info.value.report.summary()
