"""The grader agent loop: prompt, call the backend, run its tool calls, build a checked verdict.

`run_grader` is pure (no Django, no Celery): the service passes a `GroupInput`, a backend and an
optional sandbox, persists what `on_event` hands it, and stores the returned outcome.
TransientBackendError propagates so that the Celery task can retry the whole run.

The protocol a backend follows (a model, or a deterministic backend such as the heuristic):

1. Each call gets the whole conversation so far and every tool spec (`tool_specs`): read-only
   exploration tools plus the two submission tools of `grading.grader.protocol`. The list never
   changes during a run, so the request prefix stays cache-eligible.
2. A reply is an assistant message with tool calls. Per turn the loop runs at most
   `Budget.max_parallel_calls` exploration calls (`CallOptions.max_tool_calls`); the rest are
   answered "not run" and can be sent again. Submission calls are not counted.
3. The verdict is sent in parts: one `grade_candidate` per passing candidate (failing ones may be
   graded with tier null), in any turn, each checked and stored at once; the answer is "accepted"
   or names the candidate and fields to fix (send that grade again). Then one `submit_ranking`
   (ordering best first, ties, reorder notes, confidence) assembles the `gagar.verdict.v1`
   verdict; ranks within tiers are derived from the ordering and ties. It is checked as a whole
   and ends the run when accepted. Each grade and the ranking may be rejected `max_reasks`
   times; one more rejection fails the run.
4. After each turn a "[budget]" user note says what is left (context, calls, tokens, time) and
   warns before the final phase. In the final phase `CallOptions.tool_choice` forces a
   submission tool ("required", then "submit_ranking"); exploration calls are refused. A reply
   without a tool call gets a nudge (`MAX_NUDGES`, one in the final phase), then the run fails.
5. A reply cut at its output limit (`Completion.truncated`) is never parsed as a broken
   submission: its cut calls are answered "your call was cut at N tokens; send it in parts"
   and the next call may use up to twice the output tokens.
6. Old tool results are replaced by stubs in blocks when the context passes its high-water mark
   (`grading.grader.context`); a stubbed result can simply be fetched again. A server that
   refuses a request as too long (`ContextOverflowError`) teaches the loop its real window.

A deterministic backend computes its verdict and sends `protocol.verdict_to_turns(verdict)`.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

from grading.grader import prompts
from grading.grader.backends.base import (
    Backend,
    CallOptions,
    Completion,
    ContextOverflowError,
    Message,
    PermanentBackendError,
)
from grading.grader.budget import BudgetUse, Plan, note, plan
from grading.grader.context import ContextManager, ContextWindow
from grading.grader.incremental import VerdictBuilder
from grading.grader.inputs import Budget, GroupInput, Pricing, Rubric
from grading.grader.protocol import RANK
from grading.grader.sandbox.base import Limits, Sandbox
from grading.grader.tools import Toolbox, ToolLogEntry, assign_aliases, trajectory_redactor
from grading.grader.toolspecs import tool_specs
from grading.grader.turns import TurnHandling
from grading.grader.verdict import finalize, map_aliases
from grading.grader.verdict_check import ExecutionRecord, Problem, VerdictContext
from grading.grader.workspace import Workspace, WorkspaceError

MAX_OVERFLOW_RETRIES = 3  # in a row, for one call
MIN_OUTPUT = 1024  # a reply needs at least this much room in the window


@dataclass
class LogRecord:
    kind: Literal["llm_call", "tool_call"]
    index: int
    data: dict[str, Any]


@dataclass
class GraderOutcome:
    status: Literal["ok", "failed"]
    reason: str
    verdict: dict[str, Any] | None  # candidate keys
    alias_verdict: dict[str, Any] | None  # as assembled (after our recomputation), by alias
    alias_map: dict[str, str]  # alias -> candidate key
    transcript: list[LogRecord]
    tool_log: list[ToolLogEntry]
    budget_use: BudgetUse
    problems: list[Problem] = field(default_factory=list)  # of the last rejected submission


def message_dict(m: Message) -> dict[str, Any]:
    return asdict(m)


@dataclass
class _Progress:
    """Where the loop is between model calls."""

    turn_start: int  # the first message compaction must keep (the current turn)
    sent: int = 0  # messages already logged in an llm_call record
    nudges: int = 0  # replies without a tool call since the last one with
    final: bool = False  # the budget planner asked for the final ranking
    overflows: int = 0  # context overflows in a row


@dataclass
class _Run(TurnHandling):
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
    prompt_version: str = prompts.CURRENT
    window: ContextWindow = field(default_factory=ContextWindow)
    pricing: Pricing = field(default_factory=Pricing)
    spend_check: Callable[[int, float], str | None] | None = None
    started: float = 0.0
    use: BudgetUse = field(default_factory=BudgetUse)
    transcript: list[LogRecord] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.cm = ContextManager(self.window)
        self.builder = VerdictBuilder(context=self._verdict_context)
        self.rejections: Counter[str] = Counter()
        self.per_call_out = self.budget.max_output_tokens_per_call

    def emit(self, kind: Literal["llm_call", "tool_call"], data: dict[str, Any]) -> None:
        rec = LogRecord(kind, len(self.transcript), data)
        self.transcript.append(rec)
        if self.on_event is not None:
            self.on_event(rec)

    def outcome(self, status: Literal["ok", "failed"], reason: str = "") -> GraderOutcome:
        alias_map = {a: c.key for a, c in self.toolbox.candidates.items()}
        verdict = None
        if status == "ok" and self.builder.final is not None:
            verdict = finalize(self.builder.final, self.rubric, self.use.verdict_fields())
        self.use.compactions = self.cm.compactions
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

    def _verdict_context(self) -> VerdictContext:
        tb = self.toolbox
        return VerdictContext(
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

    # -- the loop ---------------------------------------------------------------------------

    def run(self) -> GraderOutcome:
        self.started = self.clock()
        self._open_conversation()
        state = _Progress(turn_start=len(self.messages))
        while True:
            call = self._next_call(state)
            if isinstance(call, GraderOutcome):
                return call
            est, max_out = call
            t0 = self.clock()
            comp = self._complete(state, est, max_out)
            if isinstance(comp, GraderOutcome):
                return comp
            if comp is None:
                continue  # compacted after a context overflow: ask again
            state.overflows = 0
            self._account(comp, est, max_out, state.final, state.sent, t0)
            self.messages.append(comp.message)
            state.sent, state.turn_start = len(self.messages), len(self.messages) - 1
            if not comp.message.tool_calls:
                reason = self._no_calls(comp, max_out, state.final, state.nudges)
                if reason:
                    return self.outcome("failed", reason)
                state.nudges += 0 if comp.truncated else 1
                continue
            done = self._turn(comp, max_out, state.final)
            if done is not None:
                return done
            self._note(est)

    def _open_conversation(self) -> None:
        tb = self.toolbox
        passing = {a: c.passed for a, c in tb.candidates.items()}
        self.messages: list[Message] = [
            Message("system", prompts.system_prompt(self.prompt_version, self.rubric)),
            Message(
                "user",
                prompts.user_prompt(self.group, passing, self.budget, tb.workspace is not None),
            ),
        ]
        self.specs = tool_specs(with_sandbox=tb.sandbox is not None, sandbox=tb.sandbox)

    def _next_call(self, state: _Progress) -> tuple[int, int] | GraderOutcome:
        """The next request's estimated input and allowed output, or the outcome when the
        budget, the context window or the spend limit leaves no room for it."""
        self.use.wall_seconds = round(self.clock() - self.started, 3)
        max_out = min(self.per_call_out, self.budget.max_output_tokens - self.use.output_tokens)
        max_out = max(max_out, 1)
        fitted = self._fit(state.turn_start, max_out)
        if isinstance(fitted, str):
            return self.outcome("failed", fitted)
        est, max_out = fitted
        p = self._plan(est, max_out)
        if p.stop:
            return self.outcome("failed", f"budget exhausted without a valid verdict: {p.stop}")
        if self.spend_check is not None:
            reason = self.spend_check(est + max_out, self.pricing.cost(est, 0, max_out))
            if reason:
                return self.outcome("failed", f"spend limit: {reason}")
        if p.final and not state.final:
            state.final, state.nudges = True, 0
        return est, max_out

    def _complete(
        self, state: _Progress, est: int, max_out: int
    ) -> Completion | GraderOutcome | None:
        """One model call; None after a context overflow was answered by compacting (the
        window learnt from the server's error), an outcome when the run cannot go on."""
        options = CallOptions(
            tool_choice=self._tool_choice(state.final),
            cache_prefix=len(self.messages),
            max_tool_calls=self.budget.max_parallel_calls,
        )
        try:
            return self.backend.complete(
                self.messages,
                self.specs,
                max_output_tokens=max_out,
                temperature=self.temperature,
                seed=self.seed,
                options=options,
            )
        except ContextOverflowError as exc:
            state.overflows += 1
            if state.overflows > MAX_OVERFLOW_RETRIES:
                return self.outcome("failed", f"context window exceeded: {exc}")
            self.window.window = exc.limit or round(self.window.window * 0.75)
            self.window.source = "the server's error"
            if exc.prompt_tokens:  # the server's count of this very request
                self.cm.calibrate(round(est / self.cm.scale), exc.prompt_tokens)
            self.cm.compact(
                self.messages, self.specs, keep_from=state.turn_start, max_output=max_out
            )
            return None
        except PermanentBackendError as exc:
            return self.outcome("failed", f"backend error: {exc}")

    def _tool_choice(self, final: bool) -> str:
        if not final:
            return "auto"
        return "required" if self.builder.missing() else RANK

    def _fit(self, turn_start: int, max_out: int) -> tuple[int, int] | str:
        """The request's estimated size after any compaction and the output it may ask for (less
        than planned when the window is tight), or why it cannot fit."""
        est = self.cm.estimate(self.messages, self.specs)
        if est > self.window.limit(max_out):
            self.cm.compact(self.messages, self.specs, keep_from=turn_start, max_output=max_out)
            est = self.cm.estimate(self.messages, self.specs)
        room = self.window.window - est - max(256, self.window.window // 50)
        if room < min(max_out, MIN_OUTPUT):
            return (
                f"the conversation ({est} tokens) cannot fit the context window of "
                f"{self.window.window} tokens ({self.window.source}) even after compaction"
            )
        return est, min(max_out, room)

    def _plan(self, est: int, max_out: int) -> Plan:
        calls = max(self.use.llm_calls, 1)
        return plan(
            self.budget,
            self.use,
            missing=len(self.builder.missing()),
            next_input=est,
            max_output=max_out,
            pricing=self.pricing,
            seconds_per_call=self.use.wall_seconds / calls,
        )

    def _account(
        self, comp: Completion, est: int, max_out: int, final: bool, sent: int, t0: float
    ) -> None:
        u = self.use
        u.llm_calls += 1
        u.input_tokens += comp.input_tokens
        u.output_tokens += comp.output_tokens
        u.cached_input_tokens += comp.cached_input_tokens
        u.reasoning_tokens += comp.reasoning_tokens
        u.usage_estimated = u.usage_estimated or comp.usage_estimated
        u.peak_context = max(u.peak_context, comp.input_tokens or est)
        cost = self.pricing.cost(comp.input_tokens, comp.cached_input_tokens, comp.output_tokens)
        for d in comp.abandoned:
            u.abandoned_input_tokens += d.input_tokens
            u.abandoned_output_tokens += d.output_tokens
            cost += self.pricing.cost(d.input_tokens, 0, d.output_tokens)
        u.cost_usd = round(u.cost_usd + cost, 6)
        if not comp.usage_estimated:
            self.cm.calibrate(round(est / self.cm.scale), comp.input_tokens)
        # Only messages new since the previous call are logged; the rest is in earlier records.
        self.emit(
            "llm_call",
            {
                "messages_in": [message_dict(m) for m in self.messages[sent:]],
                "context_messages": len(self.messages),
                "message_out": message_dict(comp.message),
                "input_tokens": comp.input_tokens,
                "cached_input_tokens": comp.cached_input_tokens,
                "output_tokens": comp.output_tokens,
                "reasoning_tokens": comp.reasoning_tokens,
                "usage_estimated": comp.usage_estimated,
                "estimated_input_tokens": est,
                "max_output_tokens": max_out,
                "cost_usd": round(cost, 6),
                "abandoned": [asdict(d) for d in comp.abandoned],
                "latency_s": comp.latency_s or round(self.clock() - t0, 4),
                "stop_reason": comp.stop_reason,
                "truncated": comp.truncated,
                "final_phase": final,
                "compactions": self.cm.compactions,
            },
        )

    def _note(self, est: int) -> None:
        self.use.wall_seconds = round(self.clock() - self.started, 3)
        max_out = min(self.per_call_out, self.budget.max_output_tokens - self.use.output_tokens)
        est = self.cm.estimate(self.messages, self.specs)
        p = self._plan(est, max(max_out, 1))
        missing = self.builder.missing()
        self.messages.append(
            Message(
                "user",
                note(
                    self.budget,
                    self.use,
                    context=est,
                    limit=self.window.limit(max(max_out, 1)),
                    graded=sorted(self.builder.grades),
                    missing=missing,
                    p=p,
                ),
            )
        )


def run_grader(
    group: GroupInput,
    backend: Backend,
    *,
    sandbox: Sandbox | None = None,
    rubric: Rubric | None = None,
    budget: Budget | None = None,
    seed: int = 0,
    prompt_version: str = prompts.CURRENT,
    on_event: Callable[[LogRecord], None] | None = None,
    temperature: float = 0.0,
    limits: Limits | None = None,
    max_reasks: int = 2,
    workspace_root: Path | None = None,
    clock: Callable[[], float] = time.monotonic,
    context_window: ContextWindow | None = None,
    pricing: Pricing | None = None,
    spend_check: Callable[[int, float], str | None] | None = None,
) -> GraderOutcome:
    """Grade one group. `spend_check(next_call_tokens, next_call_usd)` may stop the run before
    a call (daily spend limits); it returns the reason."""
    candidates = assign_aliases(group.candidates, seed)
    workspace: Workspace | None = None
    toolbox = Toolbox(
        group,
        candidates,
        sandbox=sandbox,
        limits=limits or Limits(),
        redact_event=trajectory_redactor(group),
    )
    run = _Run(
        group, backend, toolbox, rubric or Rubric(), budget or Budget(), seed, temperature,
        max_reasks, on_event, clock, prompt_version=prompts.resolve(prompt_version),
        window=context_window or ContextWindow(), pricing=pricing or Pricing(),
        spend_check=spend_check,
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
