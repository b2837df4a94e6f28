"""The vocabulary the sample attempts are written in.

An attempt is a script of trajectory steps. The builder replays the script in a fresh copy of the
sample repository: edits are applied in order, commands really run at that point of the replay, and
file excerpts are read from the tree as it is then. So every observation, the final diff and the
test output are real, and the trajectory cannot drift from the patch.
"""

import json
from dataclasses import dataclass, field

type Event = dict[str, str | None]


@dataclass(frozen=True)
class Say:
    """A message, thought or error whose text is written out in full."""

    kind: str
    role: str | None
    text: str


@dataclass(frozen=True)
class Run:
    """A shell command the agent ran; its output is captured when the builder replays it."""

    command: str
    # Text shown instead of running, for attempts whose sandbox died (the infra failure).
    fake_output: str | None = None


@dataclass(frozen=True)
class View:
    """The agent reading lines ``start``..``end`` of a file, shown with line numbers."""

    path: str
    start: int = 1
    end: int = 200


@dataclass(frozen=True)
class Replace:
    """A ``str_replace`` edit: ``old`` must occur exactly once in ``path``."""

    path: str
    old: str
    new: str
    # The editor's error message, for an edit the editor rejected (nothing is changed).
    fails: str | None = None


@dataclass(frozen=True)
class Create:
    """A new file (or a whole-file rewrite)."""

    path: str
    content: str


type Step = Say | Run | View | Replace | Create


@dataclass(frozen=True)
class Agent:
    system: str
    model: str
    family: str


@dataclass(frozen=True)
class Attempt:
    id: str
    # What the attempt is an example of; kept out of group.jsonl so it cannot leak to a grader.
    design: str
    agent: Agent
    steps: list[Step]
    status: str = "valid"
    # For the infra failure: the harness message instead of a real test run.
    infra_output: str | None = None
    metadata: dict[str, str] = field(default_factory=dict)


def system(text: str) -> Say:
    return Say("message", "system", text)


def user(text: str) -> Say:
    return Say("message", "user", text)


def think(text: str) -> Say:
    return Say("thought", "assistant", text)


def reply(text: str) -> Say:
    return Say("message", "assistant", text)


def error(text: str) -> Say:
    return Say("error", "tool", text)


def edit_args(step: Replace | Create) -> str:
    """The tool-call arguments an editor tool would have received for this edit."""
    if isinstance(step, Replace):
        payload = {"command": "str_replace", "path": step.path, "old_str": step.old}
        payload["new_str"] = step.new
    else:
        payload = {"command": "create", "path": step.path, "file_text": step.content}
    return json.dumps(payload, ensure_ascii=False)
