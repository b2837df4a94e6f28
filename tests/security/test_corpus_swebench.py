"""The hostile corpus through the SWE-bench importer (`manage.py import swebench`): task records
(instance_id, repo, base_commit, problem_statement, FAIL_TO_PASS/PASS_TO_PASS, patch and
test_patch content and file names), predictions (model_name_or_path, model_patch content and
file names), evaluation reports, trajectory files and the `--label` option.

Each payload is stored faithfully (read back equal) or refused with a clear message that names
the field, writing nothing; instance ids never lead the trajectory lookup out of its folder; and
the review and admin pages render what was imported inert (tests/security/corpus.py).
"""

from __future__ import annotations

import io
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import Client

from grading.models import Attempt, Group, Patch, Run, Task, Trajectory
from grading.selectors.rollouts import trajectory_events
from review.services.campaigns import campaign_create
from review.services.queue import assignment_next
from tests.factories import StaffFactory, UserFactory
from tests.security.corpus import (
    HUGE,
    MARK,
    NUL,
    PAYLOADS,
    file_name,
    fits_a_name,
    new_file_patch,
)
from tests.security.pages import assert_admin_pages_inert, assert_inert

pytestmark = pytest.mark.django_db
NAMED = [name for name in PAYLOADS if fits_a_name(name)]


# --- building SWE-bench inputs ---------------------------------------------------------------


@dataclass
class System:
    """One system's files: predictions, optionally a report and a trajectories folder."""

    predictions: list[dict[str, Any]]
    array: bool = False  # a JSON array file rather than JSON Lines
    report: dict[str, Any] | None = None  # a run-level report (`resolved` list)
    instance_reports: dict[str, Any] | None = None  # per-instance report.json contents
    # instance id -> .traj document; None: no folder ({}: an empty one)
    trajectories: dict[str, dict[str, Any]] | None = None
    label: str | None = None


@dataclass
class Inputs:
    tasks: list[dict[str, Any]]
    systems: list[System]

    def write(self, root: Path) -> list[str]:
        """The files under `root`, and the `import swebench` arguments that name them."""
        root.mkdir(parents=True, exist_ok=True)
        (root / "tasks.jsonl").write_text("".join(json.dumps(t) + "\n" for t in self.tasks))
        args = ["--tasks", str(root / "tasks.jsonl"), "--no-progress"]
        # --trajectories and --label go by position: give them to every system or to none.
        with_folders = any(s.trajectories is not None for s in self.systems)
        with_labels = any(s.label is not None for s in self.systems)
        for index, system in enumerate(self.systems):
            folder = root / f"system{index}"
            folder.mkdir()
            if system.array:
                predictions = folder / "predictions.json"
                predictions.write_text(json.dumps(system.predictions))
            else:
                predictions = folder / "all_preds.jsonl"
                predictions.write_text("".join(json.dumps(p) + "\n" for p in system.predictions))
            args += ["--predictions", str(predictions)]
            if system.instance_reports is not None:
                # The harness names these folders after the instance; the importer reads them
                # all, so plain numbers keep a traversal payload from escaping the test's folder.
                for n, (instance_id, result) in enumerate(system.instance_reports.items()):
                    (folder / "logs" / str(n)).mkdir(parents=True)
                    report = folder / "logs" / str(n) / "report.json"
                    report.write_text(json.dumps({instance_id: result}))
                args += ["--report", str(folder / "logs")]
            else:
                (folder / "report.json").write_text(json.dumps(system.report or {"resolved": []}))
                args += ["--report", str(folder / "report.json")]
            if with_folders:
                trajectories = folder / "trajectories"
                trajectories.mkdir()
                for instance_id, document in (system.trajectories or {}).items():
                    path = trajectories / f"{instance_id}.traj"
                    assert path.resolve().is_relative_to(trajectories)  # the test's own safety
                    path.parent.mkdir(parents=True, exist_ok=True)
                    path.write_text(json.dumps(document))
                args += ["--trajectories", str(trajectories)]
            if with_labels:
                args += ["--label", system.label or system.predictions[0]["model_name_or_path"]]
        return args


def swe_agent_traj(text: str) -> dict[str, Any]:
    """A SWE-agent `.traj` whose prompt, thought, command and observation carry `text`."""
    return {
        "environment": "swe_main",
        "history": [
            {"role": "system", "content": "You are an agent."},
            {"role": "user", "content": text},
        ],
        "trajectory": [
            {
                "thought": text,
                "action": f"cat {text}",
                "observation": text,
                "response": "",
                "state": "",
            }
        ],
        "info": {"exit_status": "submitted", "submission": ""},
    }


def traj_events(text: str) -> list[tuple[str, str, str | None]]:
    return [
        ("message", text, None),
        ("thought", text, None),
        ("action", f"cat {text}", text),
        ("observation", text, None),
    ]


def safe_instance_id(instance_id: str) -> bool:
    """Whether the importer may look a trajectory up by this id (see the traversal test)."""
    path = Path(instance_id)
    return not path.is_absolute() and ".." not in path.parts


def hostile_inputs(name: str, payload: str, *, names: bool = True) -> Inputs:
    """One instance whose every text input carries the payload (identifiers only when they can).

    System 0 (JSON Lines, per-instance reports, a trajectory) carries the payload and is
    resolved; system 1 (a JSON array, a run-level report) is a plain failing candidate.
    """
    # Text columns cannot hold a NUL: it goes to patch content and trajectories only here.
    text = payload.replace("\x00", "")
    instance_id = payload if names else f"task-{name}"
    path = file_name(name, payload) if names else f"src/{name}.py"
    model = f"model {payload}" if names else f"model-{name}"
    task = {
        "instance_id": instance_id,
        "repo": f"acme/{payload}" if names else f"acme/{name}",
        "base_commit": payload if names else "abc123",
        "problem_statement": text,
        # Hugging Face's shape (a JSON-encoded string) for one list, a plain list for the other.
        "FAIL_TO_PASS": json.dumps([f"tests/test_x.py::test[{text}]"]),
        "PASS_TO_PASS": [text],
        "patch": new_file_patch(path, f"gold {payload}"),
        "test_patch": new_file_patch(path, f"test {payload}"),
        "hints_text": text,
        "version": "1.0",
    }
    result = {
        "resolved": True,
        "patch_exists": True,
        "tests_status": {"FAIL_TO_PASS": {"success": [text], "failure": []}},
        "note": text,
    }
    hostile = System(
        predictions=[
            {
                "instance_id": instance_id,
                "model_name_or_path": model,
                "model_patch": new_file_patch(path, f"model {payload}"),
            }
        ],
        instance_reports={instance_id: result},
        # An id that leaves the folder is refused when there is a folder (tested on its own).
        trajectories=(
            {instance_id: swe_agent_traj(payload)} if safe_instance_id(instance_id) else None
        ),
    )
    plain = System(
        predictions=[
            {"instance_id": instance_id, "model_name_or_path": "plain", "model_patch": ""}
        ],
        array=True,
        report={"resolved": [], "with_logs": [instance_id]},
    )
    return Inputs(tasks=[task], systems=[hostile, plain])


def import_swebench(args: list[str]) -> str:
    """Run the command; its problems (stderr) when it refuses the files."""
    err = io.StringIO()
    try:
        call_command("import", "swebench", *args, stdout=io.StringIO(), stderr=err)
    except CommandError as exc:
        raise CommandError(f"{exc}\n{err.getvalue()}") from exc
    return err.getvalue()


def counts() -> dict[str, int]:
    models = (Run, Task, Group, Attempt, Patch, Trajectory)
    return {m.__name__: m.objects.count() for m in models}


def assert_refused(args: list[str]) -> str:
    """The import fails with a message, and not one row more is written."""
    before = counts()
    with pytest.raises(CommandError) as refused:
        import_swebench(args)
    assert counts() == before
    return str(refused.value)


def assert_stored_faithfully(inputs: Inputs) -> Attempt:
    sent = inputs.tasks[0]
    task = Task.objects.select_related("gold_patch", "test_patch").get(
        external_id=sent["instance_id"]
    )
    assert (task.repo, task.base_commit) == (sent["repo"], sent["base_commit"])
    assert task.problem_statement == sent["problem_statement"]
    assert task.fail_to_pass == json.loads(sent["FAIL_TO_PASS"])
    assert task.pass_to_pass == sent["PASS_TO_PASS"]
    assert task.metadata["hints_text"] == sent["hints_text"]
    for patch, text in ((task.gold_patch, sent["patch"]), (task.test_patch, sent["test_patch"])):
        assert bytes(patch.content) == text.encode()
        assert list(patch.files.values_list("target_path", flat=True)) == [target_of(text)]
    hostile = inputs.systems[0]
    prediction = hostile.predictions[0]
    model = prediction["model_name_or_path"]
    a = Attempt.objects.select_related("patch").get(group__task=task, external_id=model)
    assert (a.agent_system, a.agent_model) == (model, model)
    assert (a.status, a.test_reward) == ("valid", 1.0)
    # The harness's tests_status is the attempt's test report (its FAIL_TO_PASS / PASS_TO_PASS
    # sections at the top), beside the harness's own flags.
    result = dict(hostile.instance_reports[sent["instance_id"]])
    sections = result.pop("tests_status", {})
    assert a.test_report == {**result, **sections}
    assert bytes(a.patch.content) == prediction["model_patch"].encode()
    assert list(a.patch.files.values_list("target_path", flat=True)) == [
        target_of(prediction["model_patch"])
    ]
    if hostile.trajectories:
        document = hostile.trajectories[sent["instance_id"]]
        events = trajectory_events(trajectory=a.trajectory, count=4)
        assert [(e["kind"], e["text"], e.get("args")) for e in events] == traj_events(
            document["trajectory"][0]["thought"]
        )
    plain = Attempt.objects.get(group__task=task, external_id="plain")
    assert (plain.status, plain.test_reward, plain.patch_id) == ("valid", 0.0, None)
    return a


def target_of(patch: str) -> str:
    return patch.split("\n+++ b/", 1)[1].split("\n", 1)[0]


# --- stored faithfully -----------------------------------------------------------------------


@pytest.mark.parametrize("name", NAMED)
def test_each_payload_in_every_field_is_stored_faithfully(name: str, tmp_path: Path) -> None:
    inputs = hostile_inputs(name, PAYLOADS[name])
    import_swebench(inputs.write(tmp_path))
    assert_stored_faithfully(inputs)


@pytest.mark.parametrize("name", list(PAYLOADS))
def test_each_payload_as_content_is_stored_faithfully(name: str, tmp_path: Path) -> None:
    # Plain identifiers; the payload in the statement, test names, report, patch content and
    # trajectory. A NUL stays in the bytes (patches, trajectory) and a megabyte fits them all.
    inputs = hostile_inputs(name, PAYLOADS[name], names=False)
    import_swebench(inputs.write(tmp_path))
    a = assert_stored_faithfully(inputs)
    assert PAYLOADS[name].encode() in bytes(a.patch.content)


def test_reimporting_hostile_files_changes_nothing(tmp_path: Path) -> None:
    inputs = hostile_inputs("script", PAYLOADS["script"])
    args = inputs.write(tmp_path)
    import_swebench(args)
    before = counts()
    import_swebench(args)
    assert counts() == before


# --- refused clearly, nothing written --------------------------------------------------------


Change = Callable[[Inputs], None]


def _task(**values: Any) -> Change:
    return lambda i: i.tasks[0].update(values)


def _prediction(**values: Any) -> Change:
    return lambda i: i.systems[0].predictions[0].update(values)


def _both_ids(instance_id: str) -> Change:
    def change(i: Inputs) -> None:
        i.tasks[0]["instance_id"] = instance_id
        for system in i.systems:
            system.predictions[0]["instance_id"] = instance_id
        i.systems[0].instance_reports = {instance_id: {"resolved": True}}
        i.systems[0].trajectories = {}  # a folder to look in

    return change


def _report(result: dict[str, Any]) -> Change:
    def change(i: Inputs) -> None:
        i.systems[0].instance_reports = {"task-plain": result}

    return change


def _label(label: str) -> Change:
    def change(i: Inputs) -> None:
        i.systems[0].label = label

    return change


A_NUL = PAYLOADS[NUL]
# (what to change, the field the problem must name, words the message must hold)
NUL_FIELDS: dict[str, tuple[Change, str, str]] = {
    "task instance_id": (_both_ids(A_NUL), "$.instance_id", "NUL"),
    "repo": (_task(repo=A_NUL), "$.repo", "NUL"),
    "base_commit": (_task(base_commit=A_NUL), "$.base_commit", "NUL"),
    "problem_statement": (_task(problem_statement=A_NUL), "$.problem_statement", "NUL"),
    "hints_text": (_task(hints_text=A_NUL), "$.hints_text", "NUL"),
    "FAIL_TO_PASS list": (_task(FAIL_TO_PASS=[A_NUL]), "$.FAIL_TO_PASS[0]", "NUL"),
    "PASS_TO_PASS list": (_task(PASS_TO_PASS=["ok", A_NUL]), "$.PASS_TO_PASS[1]", "NUL"),
    # The JSON-encoded shape hides the NUL as an escape until the string is decoded.
    "FAIL_TO_PASS string": (
        _task(FAIL_TO_PASS=json.dumps([A_NUL])),
        "$.FAIL_TO_PASS[0]",
        "NUL",
    ),
    "gold patch file name": (
        _task(patch=new_file_patch("src/a\x00b.py", "x = 1")),
        "$.patch",
        "NUL",
    ),
    "test patch file name": (
        _task(test_patch=new_file_patch("tests/a\x00b.py", "x = 1")),
        "$.test_patch",
        "NUL",
    ),
    "model patch file name": (
        _prediction(model_patch=new_file_patch("src/a\x00b.py", "x = 1")),
        "$.model_patch",
        "NUL",
    ),
    "model_name_or_path": (_prediction(model_name_or_path=A_NUL), "$.model_name_or_path", "NUL"),
    "agent_family": (_prediction(agent_family=A_NUL), "$.agent_family", "NUL"),
    "prediction instance_id": (_prediction(instance_id=A_NUL), "$.instance_id", "NUL"),
    "report contents": (
        _report({"resolved": True, "tests_status": {"FAIL_TO_PASS": {"success": [A_NUL]}}}),
        "$.task-plain.tests_status.FAIL_TO_PASS.success[0]",
        "NUL",
    ),
    "--label": (_label(A_NUL), "--label", "NUL"),
}

A_HUGE = PAYLOADS[HUGE]
HUGE_FIELDS: dict[str, tuple[Change, str, str]] = {
    "task instance_id": (_both_ids(A_HUGE), "$.instance_id", "longer than 255 characters"),
    "repo": (_task(repo=A_HUGE), "$.repo", "longer than 255 characters"),
    "base_commit": (_task(base_commit=A_HUGE), "$.base_commit", "longer than 64 characters"),
    "repo_url": (_task(repo_url=A_HUGE), "$.repo_url", "longer than 1024 characters"),
    "test_cmd": (_task(test_cmd=A_HUGE), "$.test_cmd", "longer than 1024 characters"),
    "gold patch file name": (
        _task(patch=new_file_patch(f"src/{A_HUGE}.py", "x = 1")),
        "$.patch",
        "file name longer than 1024 characters",
    ),
    "model patch file name": (
        _prediction(model_patch=new_file_patch(f"src/{A_HUGE}.py", "x = 1")),
        "$.model_patch",
        "file name longer than 1024 characters",
    ),
    "model_name_or_path": (
        _prediction(model_name_or_path=A_HUGE),
        "$.model_name_or_path",
        "longer than 255 characters",
    ),
    "agent_family": (
        _prediction(agent_family=A_HUGE),
        "$.agent_family",
        "longer than 255 characters",
    ),
    "--label": (_label(A_HUGE), "--label", "longer than 255 characters"),
}


def _nested(depth: int) -> Any:
    value: Any = []
    for _ in range(depth):
        value = [value]
    return value


# What the safe JSON reader refuses (nesting bombs, huge or out-of-range integers, NaN and
# Infinity, lone surrogates), in each SWE-bench file: tasks, predictions, reports.
UNSAFE_FIELDS: dict[str, tuple[Change, str, str]] = {
    "lone surrogate in an instance id": (
        _both_ids("task-\ud800"),
        "$.instance_id",
        "lone surrogate",
    ),
    "lone surrogate in a model name": (
        _prediction(model_name_or_path="model-\udc00"),
        "$.model_name_or_path",
        "lone surrogate",
    ),
    "lone surrogate in a problem statement": (
        _task(problem_statement="fix \ud800 this"),
        "$.problem_statement",
        "lone surrogate",
    ),
    "lone surrogate in a model patch": (
        _prediction(model_patch=new_file_patch("src/a.py", "x = '\ud800'")),
        "$.model_patch",
        "lone surrogate",
    ),
    "NaN in a report": (
        _report({"resolved": True, "tests_status": {"score": float("nan")}}),
        "",
        "NaN is not JSON",
    ),
    "Infinity in task metadata": (_task(version=float("inf")), "", "Infinity is not JSON"),
    "integer of 31 digits in a prediction": (_prediction(cost=10**30), "", "31 digits"),
    "integer over int64 in a report": (
        _report({"resolved": True, "tests_status": {"n": 2**64}}),
        "$.task-plain.tests_status.n",
        "64-bit",
    ),
    "nesting bomb in a prediction": (_prediction(extra=_nested(500)), "", "nested deeper"),
}


@pytest.mark.parametrize("case", list(UNSAFE_FIELDS))
def test_unsafe_json_in_a_swebench_file_is_refused_with_file_line_and_field(
    case: str, tmp_path: Path
) -> None:
    change, where, words = UNSAFE_FIELDS[case]
    message = _refusal(tmp_path, change)
    assert words in message and (not where or f": {where}" in message), message[:2000]
    assert str(tmp_path / "hostile") in message, message[:2000]
    assert "Traceback" not in message and len(message) < 2000, message[:2000]


def _refusal(tmp_path: Path, change: Change) -> str:
    # Something already imported: a refused file must leave it, and add nothing to it.
    import_swebench(hostile_inputs("seed", "seed", names=False).write(tmp_path / "seed"))
    inputs = hostile_inputs("plain", "plain", names=False)
    change(inputs)
    return assert_refused(inputs.write(tmp_path / "hostile"))


@pytest.mark.parametrize("case", list(NUL_FIELDS))
def test_a_nul_in_a_text_field_is_refused_with_a_clear_problem(case: str, tmp_path: Path) -> None:
    change, where, words = NUL_FIELDS[case]
    message = _refusal(tmp_path, change)
    assert f": {where}: " in message and words in message, message
    assert "Traceback" not in message and len(message) < 2000, message[:2000]


@pytest.mark.parametrize("case", list(HUGE_FIELDS))
def test_an_oversized_value_is_refused_not_truncated(case: str, tmp_path: Path) -> None:
    change, where, words = HUGE_FIELDS[case]
    message = _refusal(tmp_path, change)
    assert f": {where}: " in message and words in message, message[:2000]
    # The problem names the field; it does not repeat a megabyte back.
    assert len(message) < 2000, message[:2000]


def test_an_unknown_megabyte_instance_id_is_refused_in_a_short_message(tmp_path: Path) -> None:
    message = _refusal(tmp_path, _prediction(instance_id=A_HUGE))
    assert '$.instance_id: no task record for "AAAA' in message and len(message) < 2000


# --- trajectory lookup stays in its folder ---------------------------------------------------


def _outside_secret(tmp_path: Path) -> Path:
    """A trajectory the importer must never read: beside, not inside, the trajectories folder."""
    secret = tmp_path / "outside" / "secret"
    secret.mkdir(parents=True)
    document = swe_agent_traj("the secret next door")
    (tmp_path / "outside" / "secret.traj").write_text(json.dumps(document))
    (secret / "steps.json").write_text(json.dumps(document))
    return secret


@pytest.mark.parametrize("how", ["relative", "absolute", "posix-corpus"])
def test_an_instance_id_cannot_lead_the_trajectory_lookup_out_of_its_folder(
    how: str, tmp_path: Path
) -> None:
    secret = _outside_secret(tmp_path)
    root = tmp_path / "in"
    # `<tmp>/in/system0/trajectories/../../../outside/secret.traj`, `<abs>/*.json` (an absolute
    # id replaces the folder), and the corpus's own traversal payload.
    instance_id = {
        "relative": "../../../outside/secret",
        "absolute": str(secret),
        "posix-corpus": PAYLOADS["traversal-posix"],
    }[how]
    inputs = hostile_inputs("plain", "plain", names=False)
    _both_ids(instance_id)(inputs)
    message = assert_refused(inputs.write(root))
    # Messages quote at most 80 characters of a value (a long tmp path is cut after 60, "…").
    quoted = (
        json.dumps(instance_id)
        if len(json.dumps(instance_id)) <= 80
        else json.dumps(instance_id)[:60] + "…"
    )
    assert f": $.instance_id: {quoted} cannot name a trajectory" in message, message
    assert not Trajectory.objects.exists()


@pytest.mark.parametrize("length", [250, 251, 255])
def test_the_longest_instance_ids_look_up_trajectories_without_crashing(
    length: int, tmp_path: Path
) -> None:
    # "<id>.traj" is a legal file name up to a 250-character id; past that no such file can
    # exist (the file system refuses the name), so there is no trajectory, and no crash.
    instance_id = "A" * length
    inputs = hostile_inputs("plain", "plain", names=False)
    _both_ids(instance_id)(inputs)
    if length == 250:
        inputs.systems[0].trajectories = {instance_id: swe_agent_traj("plain")}
    import_swebench(inputs.write(tmp_path))
    a = Attempt.objects.get(group__task__external_id=instance_id, external_id="model-plain")
    assert hasattr(a, "trajectory") == (length == 250)


def test_a_model_name_is_never_a_path(tmp_path: Path) -> None:
    # Trajectories are found by instance id only: a model shaped like a path to the secret
    # (relative to the trajectories folder, or absolute) reads nothing.
    secret = _outside_secret(tmp_path)
    for n, model in enumerate(["../../../outside/secret", str(secret / "steps.json")]):
        inputs = hostile_inputs(f"plain{n}", "plain", names=False)
        inputs.systems[0].predictions[0]["model_name_or_path"] = model
        import_swebench(inputs.write(tmp_path / f"in{n}"))
        assert_stored_faithfully(inputs)
    texts = [e["text"] for t in Trajectory.objects.all() for e in trajectory_events(trajectory=t)]
    assert "plain" in texts and "the secret next door" not in texts


# --- pages render it inert -------------------------------------------------------------------


@pytest.fixture
def swebench_review(settings: Any, tmp_path: Path) -> dict[str, Any]:
    """Every named payload (and a megabyte of content) imported from SWE-bench files, in one
    campaign whose reviewers each hold a different group."""
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    every = [hostile_inputs(name, PAYLOADS[name]) for name in NAMED]
    every.append(hostile_inputs(HUGE, PAYLOADS[HUGE], names=False))
    for n, inputs in enumerate(every):
        import_swebench(inputs.write(tmp_path / str(n)))
    reviewers = [UserFactory(username=f"rita{n}") for n in range(len(every))]
    staff = StaffFactory(username="root", is_superuser=True)
    campaign = campaign_create(
        name="Hostile SWE-bench", created_by=staff, reviewers=reviewers, filters={}, overlap=1
    )
    return {"reviewers": reviewers, "staff": staff, "campaign": campaign}


def test_review_pages_render_swebench_imports_inert(swebench_review: dict[str, Any]) -> None:
    groups = set()
    pages: list[str] = []
    for reviewer in swebench_review["reviewers"]:
        client = Client()
        client.force_login(reviewer)
        assignment = assignment_next(campaign=swebench_review["campaign"], reviewer=reviewer)
        assert assignment is not None
        base = f"/review/a/{assignment.pk}"
        pages.append(assert_inert(client, f"{base}/"))
        pages.append(assert_inert(client, f"{base}/compare"))
        for c in assignment.candidates.select_related("attempt__trajectory"):
            if hasattr(c.attempt, "trajectory"):  # the plain system has none: a 404
                pages.append(assert_inert(client, f"{base}/c/{c.token}/trajectory"))
        assert_inert(client, "/review/")
        groups.add(assignment.group_id)
    assert len(groups) == Group.objects.count() == len(swebench_review["reviewers"])
    # The payloads were on the pages, escaped (and partly redacted: the hostile model names are
    # made of them), not left out of them.
    assert f"alert(&quot;{MARK}&quot;)&lt;/" in "".join(pages)


def test_admin_pages_render_swebench_imports_inert(swebench_review: dict[str, Any]) -> None:
    client = Client()
    client.force_login(swebench_review["staff"])
    assert_admin_pages_inert(client)
    assert_inert(client, f"/review/staff/{swebench_review['campaign'].pk}/")
