"""Builds the sample repository and the sample group (``gagar.group.v1``) from their sources.

    .venv/bin/python -m grading.sample.build            # rewrite grading/sample/group.jsonl
    .venv/bin/python -m grading.sample.build --check    # exit 1 if the committed file is stale
    .venv/bin/python -m grading.sample.build --repo DIR # also leave the git repository in DIR

The base commit has fixed author, committer, dates and file modes, so its SHA is the same on
every machine. Each attempt is replayed in a fresh copy of that commit (see ``replay``); its patch
is ``git diff`` of the result and its test output is a real run of the harness command.
"""

import argparse
import json
import math
import os
import re
import sys
import tempfile
from pathlib import Path
from subprocess import run
from typing import Any

from grading.sample.attempts import ATTEMPTS
from grading.sample.replay import Replay, run_command
from grading.sample.steps import Attempt, Event
from grading.sample.task import (
    FAIL_TO_PASS,
    PASS_TO_PASS,
    PROBLEM_STATEMENT,
    REPO,
    TASK_ID,
    TEST_COMMAND,
)

type Report = dict[str, dict[str, list[str]]]

HERE = Path(__file__).resolve().parent
REPO_SOURCE = HERE / "repo"
GROUP_FILE = HERE / "group.jsonl"
_REPORT_PARTS = ("FAIL_TO_PASS", "PASS_TO_PASS")
_SKIPPED = {"__pycache__", ".pytest_cache", ".git", ".venv"}
_GIT_DATE = "1768478400 +0000"  # 2026-01-15 12:00 UTC
# Tool schemas and the harness preamble a model sees on every call, before the conversation.
_PROMPT_OVERHEAD_TOKENS = 1400
# Output a call spends beyond the visible text: tool-call framing and hidden reasoning.
_CALL_OUTPUT_TOKENS = 90


def _git(cwd: Path, *args: str) -> str:
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(cwd),
        # Ignore the host's git configuration (autocrlf, signing, hooks, diff settings).
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_AUTHOR_NAME": "GAGAR Samples",
        "GIT_AUTHOR_EMAIL": "samples@gagar.invalid",
        "GIT_AUTHOR_DATE": _GIT_DATE,
        "GIT_COMMITTER_NAME": "GAGAR Samples",
        "GIT_COMMITTER_EMAIL": "samples@gagar.invalid",
        "GIT_COMMITTER_DATE": _GIT_DATE,
    }
    done = run(["git", *args], cwd=cwd, env=env, capture_output=True, text=True, check=True)
    return done.stdout


def source_files() -> list[Path]:
    """The sample repository's files, relative to its root, in a stable order."""
    files = []
    for path in sorted(REPO_SOURCE.rglob("*")):
        relative = path.relative_to(REPO_SOURCE)
        if path.is_file() and not _SKIPPED & set(relative.parts) and path.suffix != ".pyc":
            files.append(relative)
    return files


def build_repo(dest: Path) -> str:
    """Create the sample git repository in ``dest`` (new or empty); return the base commit SHA."""
    dest.mkdir(parents=True, exist_ok=True)
    for relative in source_files():
        target = dest / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        # A Windows checkout may have turned LF into CRLF; the commit must not depend on it.
        target.write_bytes((REPO_SOURCE / relative).read_bytes().replace(b"\r\n", b"\n"))
        target.chmod(0o644)
    _git(dest, "init", "-q", "--initial-branch=main")
    _git(dest, "add", "-A")
    _git(dest, "commit", "-q", "--no-verify", "-m", "humanize-lite 0.3.1")
    return _git(dest, "rev-parse", "HEAD").strip()


def diff_against_head(tree: Path) -> str:
    """The tree's changes as an agent would submit them: ``git diff`` with a/ b/ prefixes."""
    _git(tree, "add", "-A")
    return _git(
        tree, "diff", "--cached", "--no-color", "--no-ext-diff", "--no-renames",
        "--src-prefix=a/", "--dst-prefix=b/", "HEAD",
    )  # fmt: skip


def parse_test_report(output: str) -> Report:
    """Split the FAIL_TO_PASS and PASS_TO_PASS tests by outcome, from the ``-rA`` summary."""
    passed = set(re.findall(r"^PASSED (\S+)", output, flags=re.MULTILINE))
    report: Report = {}
    for name, tests in zip(_REPORT_PARTS, (FAIL_TO_PASS, PASS_TO_PASS), strict=True):
        report[name] = {
            "success": [test for test in tests if test in passed],
            "failure": [test for test in tests if test not in passed],
        }
    return report


def token_counts(events: list[Event]) -> tuple[int, int, int]:
    """(turns, tokens in, tokens out), estimated at four characters per token.

    Each model call reads the whole conversation so far; a call starts at the first assistant
    event after a non-assistant one. Turns are the assistant's actions (tool calls).
    """
    context = tokens_in = tokens_out = turns = 0
    previous_role: str | None = None
    for item in events:
        size = math.ceil((len(item["text"] or "") + len(item["args"] or "")) / 4)
        if item["role"] == "assistant":
            if previous_role != "assistant":
                tokens_in += _PROMPT_OVERHEAD_TOKENS + context
                tokens_out += _CALL_OUTPUT_TOKENS
            tokens_out += size
            turns += item["kind"] == "action"
        context += size
        previous_role = item["role"]
    return turns, tokens_in, tokens_out


def build_attempt(
    attempt: Attempt, tree: Path, base: str, base_outputs: dict[str, str]
) -> dict[str, Any]:
    if build_repo(tree) != base:
        raise RuntimeError("the sample repository did not rebuild to the same commit")
    replay = Replay(tree, base_outputs)
    events = [item for step in attempt.steps for item in replay.play(step)]
    patch = diff_against_head(tree)
    if attempt.infra_output is not None:
        output, reward = attempt.infra_output, 0.0
        # The tests never ran, so no test is listed as passed or failed.
        report: Report = {name: {"success": [], "failure": []} for name in _REPORT_PARTS}
    else:
        output = run_command(tree, TEST_COMMAND)
        report = parse_test_report(output)
        passed = all(not part["failure"] for part in report.values())
        reward = 1.0 if passed else 0.0
    turns, tokens_in, tokens_out = token_counts(events)
    return {
        "id": attempt.id,
        "status": attempt.status,
        "test_reward": reward,
        "test_report": report,
        "test_output": output,
        "patch": patch,
        "trajectory": {"format": "native", "events": events},
        "num_turns": turns,
        "tokens_in": tokens_in,
        "tokens_out": tokens_out,
        "agent": {
            "system": attempt.agent.system,
            "model": attempt.agent.model,
            "family": attempt.agent.family,
            "metadata": dict(attempt.metadata),
        },
    }


def build_group(attempts: list[Attempt] | None = None) -> dict[str, Any]:
    """The sample group, built from scratch in a temporary directory (a few seconds)."""
    with tempfile.TemporaryDirectory(prefix="gagar-sample-") as tmp:
        root = Path(tmp)
        base = build_repo(root / "base")
        base_outputs: dict[str, str] = {}
        built = [
            build_attempt(attempt, root / attempt.id, base, base_outputs)
            for attempt in (ATTEMPTS if attempts is None else attempts)
        ]
    task = {
        "id": TASK_ID,
        "repo": REPO,
        # Filled in by whoever builds the repository locally (the demo loader).
        "repo_url": "",
        "base_commit": base,
        "problem_statement": PROBLEM_STATEMENT,
        "fail_to_pass": FAIL_TO_PASS,
        "pass_to_pass": PASS_TO_PASS,
        "test_command": TEST_COMMAND,
        # The FAIL_TO_PASS tests are already in the base commit (see task.py).
        "test_patch": "",
        "gold_patch": "",
        "metadata": {"language": "python", "version": "0.3.1"},
    }
    return {
        "schema": "gagar.group.v1",
        "group_id": "sample-humanize-lite-1024",
        "run": "sample-run",
        "step": 0,
        "task": task,
        "attempts": built,
        "metadata": {"sample": True, "built_by": "python -m grading.sample.build"},
    }


def group_line(group: dict[str, Any]) -> str:
    return json.dumps(group, ensure_ascii=False) + "\n"


def load_committed_group() -> dict[str, Any]:
    group: dict[str, Any] = json.loads(GROUP_FILE.read_text(encoding="utf-8"))
    return group


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--check", action="store_true", help="compare with the committed file")
    parser.add_argument("--repo", type=Path, help="also build the git repository here")
    parser.add_argument("--out", type=Path, default=GROUP_FILE, help="where to write the group")
    args = parser.parse_args(argv)
    if args.repo is not None:
        print(f"base commit {build_repo(args.repo)} in {args.repo}")
    group = build_group()
    if args.check:
        if group != load_committed_group():
            print(f"{GROUP_FILE} is stale: run python -m grading.sample.build", file=sys.stderr)
            return 1
        print(f"{GROUP_FILE} is up to date")
        return 0
    args.out.write_text(group_line(group), encoding="utf-8")
    print(f"wrote {args.out} ({len(group['attempts'])} attempts)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
