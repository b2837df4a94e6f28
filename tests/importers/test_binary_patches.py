"""Binary patches (`GIT binary patch`, `Binary files … differ`) are stored byte for byte and
flagged, and never offered as code: the review pages show a binary change, the grader reads
that a binary file changed, not its encoded data. Patches holding a lone surrogate's bytes and
passing SWE-bench attempts without a patch are refused with file, line and field."""

from __future__ import annotations

import base64
import io
import json
import re
import subprocess
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import Client
from django.utils.html import escape

from grading.diffs import parse_patch
from grading.grader import tool_output
from grading.grader.heuristic import HeuristicBackend
from grading.grader.loop import run_grader
from grading.models import Attempt, Patch, PatchFile
from grading.services.grader_inputs import group_input
from review.models import Assignment
from review.services.campaigns import campaign_create
from review.services.queue import assignment_next
from tests.factories import StaffFactory, UserFactory
from tests.importers.helpers import PATCH, attempt, group, jsonl
from tests.review.helpers import with_panel_fragments

pytestmark = pytest.mark.django_db


def git_binary_patch(tmp_path: Path) -> str:
    """What `git diff --binary` writes for a new PNG and a text edit: made by git itself."""
    repo = tmp_path / "repo"
    repo.mkdir()

    def git(*args: str) -> str:
        return subprocess.run(
            ["git", "-C", str(repo), *args], check=True, capture_output=True, text=True
        ).stdout

    git("init", "-q")
    (repo / "pkg").mkdir()
    (repo / "pkg" / "sizes.py").write_text("def f(n):\n    return n > 1\n\n")
    git("add", ".")
    git("-c", "user.email=t@example.org", "-c", "user.name=t", "commit", "-qm", "base")
    (repo / "pkg" / "sizes.py").write_text("def f(n):\n    return n >= 1\n\n")
    (repo / "docs").mkdir()
    (repo / "docs" / "logo.png").write_bytes(bytes(range(256)) * 4)
    git("add", ".")
    return git("diff", "--cached", "--binary")


DIFFERS = (
    "diff --git a/docs/icon.ico b/docs/icon.ico\nindex 1111111..2222222 100644\n"
    "Binary files a/docs/icon.ico and b/docs/icon.ico differ\n"
)


def encoded_lines(patch: str) -> list[str]:
    """The base85 data lines of a `GIT binary patch` block."""
    lines = patch.splitlines()
    start = lines.index("GIT binary patch") + 2
    end = next(i for i in range(start, len(lines)) if lines[i].startswith("diff --git "))
    data = [ln for ln in lines[start:end] if ln and not ln.startswith(("literal", "delta"))]
    assert len(data) >= 5
    # As a page would show them, too.
    return data + [escape(ln) for ln in data]


def import_binary_group(tmp_path: Path) -> tuple[str, str]:
    binary = git_binary_patch(tmp_path)
    out = io.StringIO()
    bundle = tmp_path / "step.jsonl"
    bundle.write_bytes(
        jsonl(
            group(
                "t-binary",
                attempts=[
                    attempt("bin", patch=binary),
                    attempt("differs", patch=PATCH + DIFFERS),
                    attempt("text", patch=PATCH.replace("n >= 1", "n >= 2")),
                    attempt("failed", test_reward=0.0, patch=None),
                ],
            )
        )
    )
    call_command("import", "bundle", str(bundle), "--no-progress", stdout=out)
    return binary, out.getvalue()


def test_binary_patches_are_stored_byte_for_byte_and_flagged(tmp_path: Path) -> None:
    binary, out = import_binary_group(tmp_path)
    assert "GIT binary patch" in binary and encoded_lines(binary)
    stored = Attempt.objects.select_related("patch").get(external_id="bin").patch
    assert stored is not None and bytes(stored.content) == binary.encode()
    assert stored.has_binary and stored.lines_added == 1 and stored.lines_removed == 1
    files = dict(PatchFile.objects.filter(patch=stored).values_list("target_path", "is_binary"))
    assert files == {"pkg/sizes.py": False, "docs/logo.png": True}
    differs = Attempt.objects.select_related("patch").get(external_id="differs").patch
    assert differs is not None and differs.has_binary
    assert list(Patch.objects.filter(has_binary=True).order_by("pk")) == [stored, differs]
    # The import says so.
    assert "2 attempts change binary files: stored and flagged" in out, out


def _reviewing() -> tuple[Client, Assignment]:
    """A reviewer's logged-in client and their assignment of the imported group."""
    reviewer = UserFactory.create()
    campaign = campaign_create(
        name="binary", created_by=StaffFactory.create(), reviewers=[reviewer], filters={}, overlap=1
    )
    assignment = assignment_next(campaign=campaign, reviewer=reviewer)
    assert assignment is not None
    client = Client()
    client.force_login(reviewer)
    return client, assignment


def test_the_review_pages_show_a_binary_change_not_its_data(tmp_path: Path) -> None:
    binary, _ = import_binary_group(tmp_path)
    client, assignment = _reviewing()
    pages = [
        client.get(f"/review/a/{assignment.pk}/"),
        client.get(f"/review/a/{assignment.pk}/compare"),
    ]
    for response in pages:
        assert response.status_code == 200
        html = response.content.decode()
        assert not any(line in html for line in encoded_lines(binary))
        assert "GIT binary patch" not in html
    # Every candidate's panel: the page brings only the active one's, in a random order.
    page = with_panel_fragments(client, assignment, pages[0].content.decode())
    assert "GIT binary patch" not in page
    assert not any(line in page for line in encoded_lines(binary))
    # Both binary files are listed and shown as binary changes, each without rows of code.
    for path in ("docs/logo.png", "docs/icon.ico"):
        shown = page.split(f'<th colspan="4" class="d-title">{path}</th>', 1)[1]
        assert shown.split("</table>", 1)[0].endswith("Binary file not shown.</td></tr></tbody>")


def test_the_file_lists_say_binary_instead_of_counting_zero_lines(tmp_path: Path) -> None:
    import_binary_group(tmp_path)
    client, assignment = _reviewing()
    page = with_panel_fragments(
        client, assignment, client.get(f"/review/a/{assignment.pk}/").content.decode()
    )
    entries = re.findall(r'<li data-file-id="[^"]+">.*?</li>', page, re.S)
    listed = {re.search(r"data-file-link>([^<]+)</a>", e).group(1): e for e in entries}  # type: ignore[union-attr]
    for path in ("docs/logo.png", "docs/icon.ico"):
        assert ">binary</span>" in listed[path], listed[path]
        assert "+0" not in listed[path] and "−0" not in listed[path], listed[path]
    # A text file keeps its counts.
    assert '<span class="add">+1</span> <span class="del">−1</span>' in listed["pkg/sizes.py"]
    # The compare page lists a file only one candidate changes the same way.
    by_alias = {c.attempt.external_id: c for c in assignment.candidates.select_related("attempt")}
    a, b = by_alias["bin"], by_alias["text"]
    compare = client.get(f"/review/a/{assignment.pk}/compare?a={a.token}&b={b.token}")
    only = compare.content.decode().split('data-path="docs/logo.png"', 1)[1].split("</summary>")[0]
    assert ">binary</span>" in only and "+0" not in only, only


def test_the_grader_sees_that_a_binary_file_changed_not_its_encoded_data(
    tmp_path: Path, settings: object
) -> None:
    binary, _ = import_binary_group(tmp_path)
    rows = tool_output.diff_with_gutter(parse_patch(binary))
    text = "\n".join(rows)
    assert "pkg/sizes.py" in text and "+    return n >= 1" in text  # code stays code
    assert "docs/logo.png" in text and "[binary data, " in text
    assert not any(line in text for line in encoded_lines(binary))

    # The whole group grades, binary candidates included, and no tool showed the data.
    attempt_ = Attempt.objects.get(external_id="bin")
    outcome = run_grader(group_input(group_id=attempt_.group_id), HeuristicBackend(), seed=1)
    assert outcome.status == "ok", outcome.reason
    assert outcome.verdict is not None and len(outcome.verdict["ordering"]) == 3
    shown = json.dumps([r.data for r in outcome.transcript], default=str)
    assert "view_diff" in shown  # the heuristic read the diffs through the tool
    assert not any(line in shown for line in encoded_lines(binary))


def attempt_with_base64_patch(data: bytes) -> dict[str, object]:
    value = attempt("a1", patch_base64=base64.b64encode(data).decode())
    del value["patch"]
    return value


def test_a_patch_holding_a_lone_surrogates_bytes_is_refused(tmp_path: Path) -> None:
    data = (PATCH.replace("n >= 1", "'\ud800'")).encode("utf-8", "surrogatepass")
    bundle = tmp_path / "step.jsonl"
    bundle.write_bytes(jsonl(group(attempts=[attempt_with_base64_patch(data)])))
    err = io.StringIO()
    with pytest.raises(CommandError):
        call_command(
            "import", "bundle", str(bundle), "--no-progress", stdout=io.StringIO(), stderr=err
        )
    assert (
        f"{bundle}:1: $.attempts[0].patch: a lone surrogate (U+D800, bytes ED A0 80) "
        "at line 7 of the patch" in err.getvalue()
    ), err.getvalue()
    assert not Patch.objects.exists() and not Attempt.objects.exists()


def test_a_resolved_swebench_attempt_without_a_patch_is_refused(tmp_path: Path) -> None:
    (tmp_path / "tasks.jsonl").write_text(
        "".join(
            json.dumps({"instance_id": i, "repo": "a/b", "problem_statement": "x"}) + "\n"
            for i in ("a-1", "a-2")
        )
    )
    (tmp_path / "all_preds.jsonl").write_text(
        json.dumps({"model_name_or_path": "m", "instance_id": "a-1", "model_patch": PATCH})
        + "\n"
        + json.dumps({"model_name_or_path": "m", "instance_id": "a-2", "model_patch": None})
        + "\n"
    )
    report = tmp_path / "results.json"
    args = [
        "--tasks", str(tmp_path / "tasks.jsonl"),
        "--predictions", str(tmp_path / "all_preds.jsonl"),
        "--report", str(report), "--no-progress",
    ]  # fmt: skip
    # Not resolved: an attempt without a patch is imported, as a failure.
    report.write_text(json.dumps({"resolved": ["a-1"]}))
    call_command("import", "swebench", *args, stdout=io.StringIO(), stderr=io.StringIO())
    assert Attempt.objects.get(group__task__external_id="a-2").patch is None
    # Resolved: refused, naming the line and field.
    Attempt.objects.all().delete()
    report.write_text(json.dumps({"resolved": ["a-1", "a-2"]}))
    err = io.StringIO()
    with pytest.raises(CommandError):
        call_command("import", "swebench", *args, "--replace", stdout=io.StringIO(), stderr=err)
    assert (
        f'{tmp_path / "all_preds.jsonl"}:2: $.model_patch: no patch, but {report} resolves "a-2"'
        in err.getvalue()
    ), err.getvalue()
