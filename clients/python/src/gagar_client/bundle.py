"""Build `gagar.group.v1` bundles from plain Python and validate them before they are sent.

The rules are the published JSON Schema (`docs/formats/gagar.group.v1.schema.json`, shipped in
this package and checked to be the same file), applied with `jsonschema` to each group, so a
bad group fails here with its index and field instead of as a 400 from the server.

    group = Group(run="run-7", step=42, task=Task(id="django-123", repo="django/django",
                  problem_statement="…"), attempts=[Attempt(id="r0", test_reward=1.0, patch=diff)])
    body = bundle([group])          # JSON Lines bytes, validated
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from typing import Any, Literal

import jsonschema

from gagar_client.errors import BundleError, Problem

SCHEMA = "gagar.group.v1"
AttemptStatus = Literal["valid", "infra_failed", "exploit_confirmed"]
TrajectoryFormat = Literal["native", "swe-agent", "openhands", "chat", "moatless"]


@cache
def json_schema() -> dict[str, Any]:
    text = resources.files("gagar_client").joinpath("schema/gagar.group.v1.schema.json")
    value: dict[str, Any] = json.loads(text.read_text(encoding="utf-8"))
    return value


@cache
def _validator() -> jsonschema.Draft202012Validator:
    return jsonschema.Draft202012Validator(json_schema())


@dataclass
class Task:
    id: str
    repo: str
    problem_statement: str
    repo_url: str = ""
    base_commit: str = ""
    fail_to_pass: list[str] = field(default_factory=list)
    pass_to_pass: list[str] = field(default_factory=list)
    test_command: str = ""
    metadata: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"id": self.id, "repo": self.repo}
        out["problem_statement"] = self.problem_statement
        for name in ("repo_url", "base_commit", "test_command"):
            if getattr(self, name):
                out[name] = getattr(self, name)
        for name in ("fail_to_pass", "pass_to_pass"):
            if getattr(self, name):
                out[name] = list(getattr(self, name))
        if self.metadata:
            out["metadata"] = dict(self.metadata)
        return out


@dataclass
class Trajectory:
    """Events in one of the formats the importer reads (`events`, `messages` or `data`)."""

    format: TrajectoryFormat = "native"
    events: list[Any] | None = None
    messages: list[dict[str, Any]] | None = None
    data: Any = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"format": self.format}
        for name in ("events", "messages", "data"):
            if getattr(self, name) is not None:
                out[name] = getattr(self, name)
        return out


@dataclass
class Attempt:
    """One rollout. `id` must be unique within its group (it may repeat across groups)."""

    id: str
    test_reward: float
    status: AttemptStatus = "valid"
    patch: str | None = None
    trajectory: Trajectory | None = None
    test_report: dict[str, Any] | None = None
    test_output: str | None = None
    num_turns: int | None = None
    tokens_in: int | None = None
    tokens_out: int | None = None
    agent_system: str = ""
    agent_model: str = ""
    agent_family: str = ""

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"id": self.id, "status": self.status}
        out["test_reward"] = float(self.test_reward)
        if self.patch is not None:
            out["patch"] = self.patch
        if self.trajectory is not None:
            out["trajectory"] = self.trajectory.to_dict()
        if self.test_report is not None:
            out["test_report"] = self.test_report
        if self.test_output is not None:
            out["test_output"] = self.test_output
        for name in ("num_turns", "tokens_in", "tokens_out"):
            if getattr(self, name) is not None:
                out[name] = getattr(self, name)
        agent = {
            k: v
            for k, v in (
                ("system", self.agent_system),
                ("model", self.agent_model),
                ("family", self.agent_family),
            )
            if v
        }
        if agent:
            out["agent"] = agent
        return out


@dataclass
class Group:
    """The attempts at one task in one step. Without `group_id`, one is made from run, step and
    task (`<run>/<step>/<task>`): advantages are keyed by (group id, attempt id)."""

    run: str
    step: int
    attempts: Sequence[Attempt]
    task: Task | None = None
    task_id: str | None = None
    group_id: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)

    @property
    def task_key(self) -> str:
        if self.task is not None:
            return self.task.id
        if self.task_id is None:
            raise BundleError([Problem(None, "task", "a group needs a task or a task_id")])
        return self.task_id

    @property
    def key(self) -> str:
        return self.group_id or default_group_id(self.run, self.step, self.task_key)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"schema": SCHEMA, "group_id": self.key, "run": self.run}
        out["step"] = self.step
        if self.task is not None:
            out["task"] = self.task.to_dict()
        else:
            out["task_id"] = self.task_key
        if self.metadata:
            out["metadata"] = dict(self.metadata)
        out["attempts"] = [a.to_dict() for a in self.attempts]
        return out


def default_group_id(run: str, step: int, task_id: str) -> str:
    return f"{run}/{step}/{task_id}"


def _shown(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= 80 else text[:60] + "…"


_KINDS = {"object": "an object", "array": "a list", "string": "a string", "integer": "an integer"}


def _message(error: jsonschema.ValidationError) -> str:
    """jsonschema's message with values as JSON (null, "x"), as the server words them
    (grading.domain.wording there; this package cannot import the server's code)."""
    found = _shown(error.instance)
    expected: Any = error.validator_value
    if error.validator == "type" and isinstance(expected, str):
        kind = _KINDS.get(expected, expected)
        return f"expected {kind}, found {found}"
    if error.validator == "const":
        return f"expected {_shown(expected)}, found {found}"
    if error.validator == "enum":
        return f"expected one of {', '.join(map(_shown, expected))}, found {found}"
    if error.validator == "required" and isinstance(error.instance, dict):
        missing = [k for k in expected if k not in error.instance]
        return (
            f"required propert{'y' if len(missing) == 1 else 'ies'} missing: {', '.join(missing)}"
        )
    quoted = repr(error.instance)
    if error.message.startswith(quoted):
        return found + error.message[len(quoted) :]
    return error.message


def validate(groups: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """Check each group against the JSON Schema, plus what a schema cannot say (attempt ids
    unique in a group, one group per task and step); raises BundleError listing every problem,
    located as `groups[i].attempts[j].field` (line = i + 1, the line the group will be on)."""
    items = list(groups)
    problems: list[Problem] = []
    seen_groups: dict[tuple[str, int, str], int] = {}
    for i, obj in enumerate(items):
        for error in sorted(_validator().iter_errors(obj), key=lambda e: list(e.absolute_path)):
            path = ".".join(str(p) for p in error.absolute_path)
            problems.append(Problem(i + 1, path, _message(error)))
        if not isinstance(obj, dict):
            continue
        ids = [a.get("id") for a in obj.get("attempts") or [] if isinstance(a, dict)]
        dupes = sorted({x for x in ids if ids.count(x) > 1 and isinstance(x, str)})
        if dupes:
            problems.append(Problem(i + 1, "attempts.id", f"repeated in the group: {dupes}"))
        task = obj.get("task_id") or (obj.get("task") or {}).get("id")
        key = (str(obj.get("run")), int(obj.get("step") or 0), str(task))
        if key in seen_groups:
            problems.append(
                Problem(i + 1, "task", f"same run, step and task as line {seen_groups[key]}")
            )
        seen_groups.setdefault(key, i + 1)
    if problems:
        raise BundleError(problems)
    return items


def bundle(groups: Iterable[Group | dict[str, Any]]) -> bytes:
    """Validated JSON Lines: one group per line, in order."""
    objs = [g.to_dict() if isinstance(g, Group) else g for g in groups]
    validate(objs)
    return b"".join(json.dumps(o, ensure_ascii=False).encode() + b"\n" for o in objs)
