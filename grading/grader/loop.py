"""The grader agent loop: prompt, call the backend, run its tool calls, accept a checked verdict.

`run_grader` is pure (no Django, no Celery): the service passes a `GroupInput`, a backend and
an optional sandbox, persists what `on_event` hands it, and stores the returned outcome.
TransientBackendError propagates so that the Celery task can retry the whole run.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

from grading.grader import prompts
from grading.grader.backends.base import Backend, Message, PermanentBackendError, ToolCall
from grading.grader.inputs import Budget, GroupInput, Rubric
from grading.grader.sandbox.base import Limits, Sandbox
from grading.grader.tools import Toolbox, ToolLogEntry, assign_aliases
from grading.grader.toolspecs import SUBMIT, submit_spec, tool_specs
from grading.grader.verdict import finalize, map_aliases, schema_errors
from grading.grader.verdict_check import ExecutionRecord, Problem, VerdictContext, check_verdict
from grading.grader.workspace import Workspace, WorkspaceError

MAX_NUDGES = 2  # replies without a tool call tolerated before giving up


@dataclass
class LogRecord:
    kind: Literal["llm_call", "tool_call"]
    index: int
    data: dict[str, Any]


@dataclass
class BudgetUse:
    llm_calls: int = 0
    tool_calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    wall_seconds: float = 0.0

    def exhausted(self, budget: Budget) -> bool:
        return (
            self.llm_calls >= budget.max_steps
            or self.input_tokens >= budget.max_input_tokens
            or self.output_tokens >= budget.max_output_tokens
            or self.wall_seconds >= budget.wall_seconds
        )


@dataclass
class GraderOutcome:
    status: Literal["ok", "failed"]
    reason: str
    verdict: dict[str, Any] | None  # candidate keys
    alias_verdict: dict[str, Any] | None  # as submitted (after our recomputation), by alias
    alias_map: dict[str, str]  # alias -> candidate key
    transcript: list[LogRecord]
    tool_log: list[ToolLogEntry]
    budget_use: BudgetUse
    problems: list[Problem] = field(default_factory=list)  # of the last rejected verdict


def message_dict(m: Message) -> dict[str, Any]:
    return asdict(m)


@dataclass
class _Run:
    group: GroupInput
    backend: Backend
    toolbox: Toolbox
    rubric: Rubric
    budget: Budget
    seed: int
    temperature: float
    max_reasks: int
    on_event: Callable[[LogRecord], None] | None
    clock: Callable[[], float]
    prompt_version: str = "v1"
    started: float = 0.0
    use: BudgetUse = field(default_factory=BudgetUse)
    transcript: list[LogRecord] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)

    def emit(self, kind: Literal["llm_call", "tool_call"], data: dict[str, Any]) -> None:
        rec = LogRecord(kind, len(self.transcript), data)
        self.transcript.append(rec)
        if self.on_event is not None:
            self.on_event(rec)

    def outcome(
        self, status: Literal["ok", "failed"], reason: str, verdict: dict[str, Any] | None = None
    ) -> GraderOutcome:
        alias_map = {a: c.key for a, c in self.toolbox.candidates.items()}
        return GraderOutcome(
            status=status,
            reason=reason,
            verdict=map_aliases(verdict, alias_map) if verdict is not None else None,
            alias_verdict=verdict,
            alias_map=alias_map,
            transcript=self.transcript,
            tool_log=self.toolbox.log,
            budget_use=self.use,
            problems=self.problems,
        )

    def run(self) -> GraderOutcome:
        self.started = self.clock()
        tb = self.toolbox
        passing = {a: c.passed for a, c in tb.candidates.items()}
        messages: list[Message] = [
            Message("system", prompts.system_prompt(self.prompt_version, self.rubric)),
            Message(
                "user",
                prompts.user_prompt(self.group, passing, self.budget, tb.workspace is not None),
            ),
        ]
        specs = tool_specs(with_sandbox=tb.sandbox is not None)
        final, final_calls, reasks, nudges, sent = False, 0, 0, 0, 0
        while True:
            self.use.wall_seconds = round(self.clock() - self.started, 3)
            if not final and self.use.exhausted(self.budget):
                final = True
                messages.append(Message("user", prompts.BUDGET_EXHAUSTED))
            if final:
                final_calls += 1
                if final_calls > 1 + self.max_reasks:
                    return self.outcome("failed", "budget exhausted without a valid verdict")
            remaining = max(self.budget.max_output_tokens - self.use.output_tokens, 256)
            t0 = self.clock()
            try:
                comp = self.backend.complete(
                    messages,
                    [submit_spec()] if final else specs,
                    max_output_tokens=min(self.budget.max_output_tokens_per_call, remaining),
                    temperature=self.temperature,
                    seed=self.seed,
                )
            except PermanentBackendError as exc:
                return self.outcome("failed", f"backend error: {exc}")
            self.use.llm_calls += 1
            self.use.input_tokens += comp.input_tokens
            self.use.output_tokens += comp.output_tokens
            # Only messages new since the previous call are logged; the rest is in earlier records.
            self.emit(
                "llm_call",
                {
                    "messages_in": [message_dict(m) for m in messages[sent:]],
                    "context_messages": len(messages),
                    "message_out": message_dict(comp.message),
                    "input_tokens": comp.input_tokens,
                    "output_tokens": comp.output_tokens,
                    "latency_s": comp.latency_s or round(self.clock() - t0, 4),
                    "stop_reason": comp.stop_reason,
                    "final_phase": final,
                },
            )
            messages.append(comp.message)
            sent = len(messages)
            if not comp.message.tool_calls:
                nudges += 1
                if final or nudges > MAX_NUDGES:
                    return self.outcome("failed", "the model stopped without submitting a verdict")
                messages.append(Message("user", prompts.NO_TOOL_CALL))
                continue
            for call in comp.message.tool_calls:
                if call.name == SUBMIT:
                    verdict, problems = self._submission(call)
                    if verdict is not None and not problems:
                        self._log_tool(call, "verdict accepted", is_error=False)
                        return self.outcome("ok", "", verdict)
                    reasks += 1
                    self.problems = problems
                    if reasks > self.max_reasks:
                        self._log_tool(call, "\n".join(map(str, problems)), is_error=True)
                        return self.outcome("failed", f"invalid verdict after {reasks} attempts")
                    content = prompts.invalid_verdict(
                        [str(p) for p in problems], self.max_reasks - reasks + 1
                    )
                    self._log_tool(call, content, is_error=True)
                elif final:
                    content = "error: only submit_verdict is allowed now"
                    self._log_tool(call, content, is_error=True)
                elif call.arguments is None:
                    why = call.error or "unparseable"
                    content = f"error: the arguments were not a JSON object ({why})"
                    self._log_tool(call, content, is_error=True)
                else:
                    res = tb.call(call.name, call.arguments)
                    self.use.tool_calls += 1
                    content = res.content
                    self.emit("tool_call", {"id": call.id, **res.entry.as_dict()})
                messages.append(Message("tool", content, tool_call_id=call.id, name=call.name))

    def _log_tool(self, call: ToolCall, content: str, *, is_error: bool) -> None:
        self.use.tool_calls += 1
        args = call.arguments if call.arguments is not None else call.raw_arguments
        entry = self.toolbox.record(call.name, args, content, is_error=is_error)
        self.emit("tool_call", {"id": call.id, **entry.as_dict()})

    def _submission(self, call: ToolCall) -> tuple[dict[str, Any] | None, list[Problem]]:
        args = call.arguments
        if args is None:
            return None, [Problem("arguments", "(root)", "arguments were not a JSON object")]
        # Some models send the verdict itself rather than {"verdict": …}; accept both.
        verdict = args.get("verdict", args) if "candidates" not in args else args
        errors = schema_errors(verdict)
        if errors:
            return None, [
                Problem("schema", e.split(":", 1)[0], e.split(":", 1)[-1].strip()) for e in errors
            ]
        tb = self.toolbox
        ctx = VerdictContext(
            aliases=list(tb.candidates),
            passing=frozenset(a for a, c in tb.candidates.items() if c.passed),
            rubric=self.rubric,
            diffs=tb.diffs,
            trajectory_lengths={a: c.event_count() for a, c in tb.candidates.items()},
            executions=[
                ExecutionRecord(e.command, e.exit_code, e.tree or "")
                for e in tb.log
                if e.command is not None and e.exit_code is not None
            ],
            line_count=tb.workspace.line_count if tb.workspace is not None else None,
        )
        problems = check_verdict(verdict, ctx)
        self.use.wall_seconds = round(self.clock() - self.started, 3)
        return finalize(verdict, self.rubric, asdict(self.use)), problems


def run_grader(
    group: GroupInput,
    backend: Backend,
    *,
    sandbox: Sandbox | None = None,
    rubric: Rubric | None = None,
    budget: Budget | None = None,
    seed: int = 0,
    prompt_version: str = "v1",
    on_event: Callable[[LogRecord], None] | None = None,
    temperature: float = 0.0,
    limits: Limits | None = None,
    max_reasks: int = 2,
    workspace_root: Path | None = None,
    clock: Callable[[], float] = time.monotonic,
) -> GraderOutcome:
    candidates = assign_aliases(group.candidates, seed)
    workspace: Workspace | None = None
    toolbox = Toolbox(group, candidates, sandbox=sandbox, limits=limits or Limits())
    run = _Run(
        group, backend, toolbox, rubric or Rubric(), budget or Budget(), seed, temperature,
        max_reasks, on_event, clock, prompt_version=prompt_version,
    )  # fmt: skip
    try:
        if group.task.repo_path is not None:
            try:
                workspace = Workspace.create(
                    group.task.repo_path,
                    group.task.base_commit,
                    {a: c.patch for a, c in candidates.items()},
                    root=workspace_root,
                )
            except WorkspaceError as exc:
                return run.outcome("failed", f"workspace: {exc}")
            toolbox.workspace = workspace
        return run.run()
    finally:
        if workspace is not None:
            workspace.cleanup()
