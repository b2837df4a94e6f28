"""Replays an attempt's steps in a real working tree and records the trajectory events.

Everything an observation shows comes from the tree at that point of the replay. Outputs are
normalised so the result is the same on every machine: the tree's path becomes /testbed, pytest's
run duration is dropped and search results are sorted.
"""

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

from grading.sample.steps import Create, Event, Replace, Run, Say, Step, View, edit_args

COMMAND_TIMEOUT_S = 120
_SNIPPET_CONTEXT = 4
_DURATION = re.compile(r"(\d+ (?:passed|failed|errors?|skipped|deselected|warnings?)) in [\d.]+s")


def command_env() -> dict[str, str]:
    """A small, fixed environment, so host settings cannot change what the commands print."""
    return {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "LANG": "C.UTF-8",
        "LC_ALL": "C.UTF-8",
        "PYTHONHASHSEED": "0",
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONIOENCODING": "utf-8",
        # Our own venv has pytest-django and friends; the sample repo must see plain pytest.
        "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1",
        "PYTEST_ADDOPTS": "-p no:cacheprovider",
        "COLUMNS": "100",
    }


def run_command(tree: Path, command: str) -> str:
    """Run ``command`` in ``tree`` and return its merged, normalised output."""
    argv = shlex.split(command)
    if argv[0] == "python":
        argv[0] = sys.executable
    try:
        done = subprocess.run(
            argv,
            cwd=tree,
            env=command_env(),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            timeout=COMMAND_TIMEOUT_S,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return f"Command timed out after {COMMAND_TIMEOUT_S} s"
    output = done.stdout.decode("utf-8", errors="replace").replace(str(tree), "/testbed")
    output = _DURATION.sub(r"\1", output)
    if argv[0] == "grep":
        # grep walks directories in file-system order; sort by path and line number instead.
        lines = output.splitlines()
        output = "\n".join(sorted(lines, key=_grep_key)) + ("\n" if lines else "")
    return output


def _grep_key(line: str) -> tuple[str, int]:
    path, _, rest = line.partition(":")
    number = rest.partition(":")[0]
    return path, int(number) if number.isdigit() else 0


def numbered(text: str, start: int, end: int) -> str:
    """Lines ``start``..``end`` (1-based, inclusive) in the format of ``nl -ba`` / ``cat -n``."""
    lines = text.splitlines()
    return "".join(f"{n:6}\t{lines[n - 1]}\n" for n in range(start, min(end, len(lines)) + 1))


def event(
    kind: str, role: str | None, text: str, tool: str | None = None, args: str | None = None
) -> Event:
    return {"kind": kind, "role": role, "text": text, "tool": tool, "args": args}


class Replay:
    """One attempt's tree; ``play`` applies a step and returns the events it produced."""

    def __init__(self, tree: Path, base_outputs: dict[str, str]) -> None:
        self.tree = tree
        # Outputs of commands run before any edit; identical for every attempt, so shared.
        self.base_outputs = base_outputs
        self.edited = False

    def play(self, step: Step) -> list[Event]:
        if isinstance(step, Say):
            return [event(step.kind, step.role, step.text)]
        if isinstance(step, Run):
            return self._run(step)
        if isinstance(step, View):
            return self._view(step)
        return self._edit(step)

    def _run(self, step: Run) -> list[Event]:
        action = event("action", "assistant", step.command, "bash", step.command)
        if step.fake_output is not None:
            return [action, event("error", "tool", step.fake_output)]
        if self.edited:
            output = run_command(self.tree, step.command)
        else:
            if step.command not in self.base_outputs:
                self.base_outputs[step.command] = run_command(self.tree, step.command)
            output = self.base_outputs[step.command]
        return [action, event("observation", "tool", output or "(no output)")]

    def _view(self, step: View) -> list[Event]:
        text = (self.tree / step.path).read_text(encoding="utf-8")
        whole = step.start == 1 and step.end >= len(text.splitlines())
        command = (
            f"cat -n {step.path}"
            if whole
            else f"nl -ba {step.path} | sed -n '{step.start},{step.end}p'"
        )
        return [
            event("action", "assistant", command, "bash", command),
            event("observation", "tool", numbered(text, step.start, step.end)),
        ]

    def _edit(self, step: Replace | Create) -> list[Event]:
        action = event(
            "action", "assistant", f"edit {step.path}", "str_replace_editor", edit_args(step)
        )
        path = self.tree / step.path
        if isinstance(step, Replace) and step.fails is not None:
            return [action, event("error", "tool", step.fails)]
        self.edited = True
        if isinstance(step, Create):
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(step.content, encoding="utf-8")
            return [
                action,
                event("observation", "tool", f"File created successfully at: {step.path}"),
            ]
        before = path.read_text(encoding="utf-8")
        if before.count(step.old) != 1:
            raise ValueError(f"{step.path}: old text must occur exactly once: {step.old!r}")
        after = before.replace(step.old, step.new)
        path.write_text(after, encoding="utf-8")
        first = before[: before.index(step.old)].count("\n") + 1
        last = first + step.new.count("\n")
        snippet = numbered(after, max(1, first - _SNIPPET_CONTEXT), last + _SNIPPET_CONTEXT)
        text = (
            f"The file {step.path} has been edited. Here's the result of running `cat -n` on a "
            f"snippet of {step.path}:\n{snippet}Review the changes and make sure they are as "
            "expected. Edit the file again if necessary."
        )
        return [action, event("observation", "tool", text)]
