"""Answering one assistant turn: run its calls within the per-turn limits, take the submission
calls into the incremental verdict, and answer cut or empty replies (see `grading.grader.loop`
for the protocol). A mixin of the loop's run state, kept apart so each file reads on its own.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Literal

from grading.grader import prompts
from grading.grader.backends.base import Completion, Message, ToolCall
from grading.grader.budget import BudgetUse
from grading.grader.context import ContextManager, ContextWindow
from grading.grader.incremental import RANKING_CODES, VerdictBuilder, problem_text
from grading.grader.inputs import Budget
from grading.grader.protocol import GRADE, RANK, SUBMISSION_TOOLS
from grading.grader.tools import Toolbox
from grading.grader.verdict_check import Problem

if TYPE_CHECKING:
    from grading.grader.loop import GraderOutcome

MAX_NUDGES = 2  # replies without a tool call tolerated before giving up (1 in the final phase)
MAX_TRUNCATIONS = 4
TURN_RESULT_SHARE = 0.2  # of the context limit, for the results of one turn


class TurnHandling:
    # State of the run (declared by `loop._Run`).
    toolbox: Toolbox
    budget: Budget
    max_reasks: int
    clock: Callable[[], float]
    started: float
    use: BudgetUse
    problems: list[Problem]
    window: ContextWindow
    cm: ContextManager
    builder: VerdictBuilder
    rejections: Counter[str]
    per_call_out: int
    messages: list[Message]

    def emit(self, kind: Literal["llm_call", "tool_call"], data: dict[str, Any]) -> None:
        raise NotImplementedError

    def outcome(self, status: Literal["ok", "failed"], reason: str = "") -> GraderOutcome:
        raise NotImplementedError

    def _grow_output(self, max_out: int) -> None:
        self.use.truncations += 1
        self.per_call_out = min(
            2 * max(self.per_call_out, max_out),
            max(self.budget.max_output_tokens - self.use.output_tokens, 1),
            4 * self.budget.max_output_tokens_per_call,
        )

    def _no_calls(self, comp: Completion, max_out: int, final: bool, nudges: int) -> str:
        if comp.truncated:
            self._grow_output(max_out)
            if self.use.truncations > MAX_TRUNCATIONS:
                return f"replies kept being cut at their output limit ({max_out} tokens)"
            self.messages.append(Message("user", prompts.cut_reply(max_out, self.per_call_out)))
            return ""
        if final and nudges >= 1:
            return "the model stopped without submitting a verdict"
        if nudges >= MAX_NUDGES:
            return "the model stopped without submitting a verdict"
        self.messages.append(Message("user", prompts.NO_TOOL_CALL))
        return ""

    def _turn(self, comp: Completion, max_out: int, final: bool) -> GraderOutcome | None:
        exploration, shown = 0, 0
        limit = self.window.limit(max_out)
        # Small windows still get room for two or three results per turn.
        turn_budget = max(round(limit * TURN_RESULT_SHARE), min(8_000, round(limit * 0.35)))
        if comp.truncated:
            self._grow_output(max_out)
        for call in comp.message.tool_calls:
            is_error = True
            if call.arguments is None and comp.truncated:
                content = prompts.cut_call(call.name, max_out, self.per_call_out)
            elif call.arguments is None:
                content = f"error: the arguments were not a JSON object ({call.error or '?'})"
            elif call.name in SUBMISSION_TOOLS:
                content, is_error, done = self._submission(call)
                if done is not None:
                    return done
            elif final:
                content = prompts.FINAL_PHASE_REFUSAL
            elif exploration >= self.budget.max_parallel_calls:
                content = (
                    f"not run: at most {self.budget.max_parallel_calls} tool calls run per turn; "
                    "send this call again in your next turn"
                )
            else:
                exploration += 1
                res = self.toolbox.call(call.name, call.arguments)
                self.use.tool_calls += 1
                self.emit("tool_call", {"id": call.id, **res.entry.as_dict()})
                content, is_error = res.content, res.is_error
                size = self.cm.message_tokens(Message("tool", content))
                if shown and shown + size > turn_budget:
                    content = prompts.result_withheld(call.name, size, shown)
                shown += size
                self._answer(call, content, is_error)
                continue
            self._log_tool(call, content, is_error=is_error)
            self._answer(call, content, is_error)
        if self.use.truncations > MAX_TRUNCATIONS:
            return self.outcome("failed", f"replies kept being cut at {max_out} output tokens")
        return None

    def _answer(self, call: ToolCall, content: str, is_error: bool) -> None:
        self.messages.append(
            Message("tool", content, tool_call_id=call.id, name=call.name, is_error=is_error)
        )

    def _submission(self, call: ToolCall) -> tuple[str, bool, GraderOutcome | None]:
        args = call.arguments or {}
        if call.name == GRADE:
            alias, problems = self.builder.grade(args)
            key = f"grade {alias}"
            if not problems:
                left = self.builder.missing()
                return prompts.grade_accepted(alias, left), False, None
            what = f"grade_candidate for {alias}"
        else:
            self.use.wall_seconds = round(self.clock() - self.started, 3)
            problems = self.builder.rank(args, self.use.verdict_fields())
            key = "ranking"
            if not problems:
                self._log_tool(call, "verdict accepted", is_error=False)
                return "verdict accepted", False, self.outcome("ok")
            what = "submit_ranking"
        self.problems = problems
        self.rejections[key] += 1
        if self.rejections[key] > self.max_reasks:
            self._log_tool(call, problem_text(problems), is_error=True)
            return (
                "",
                True,
                self.outcome(
                    "failed", f"{what} rejected {self.rejections[key]} times: {problems[0]}"
                ),
            )
        regrade: list[str] = []
        fix_ranking = call.name == RANK
        if call.name == RANK:
            regrade = sorted(
                {
                    p.where.split("/")[1]
                    for p in problems
                    if p.where.startswith("candidates/") and p.code not in RANKING_CODES
                }
            )
            fix_ranking = not regrade or any(
                p.code in RANKING_CODES or not p.where.startswith("candidates/") for p in problems
            )
        text = prompts.rejected(
            what, problem_text(problems), self.max_reasks - self.rejections[key] + 1,
            regrade=regrade, fix_ranking=fix_ranking,
        )  # fmt: skip
        return text, True, None

    def _log_tool(self, call: ToolCall, content: str, *, is_error: bool) -> None:
        self.use.tool_calls += 1
        args = call.arguments if call.arguments is not None else call.raw_arguments
        entry = self.toolbox.record(call.name, args, content, is_error=is_error)
        self.emit("tool_call", {"id": call.id, **entry.as_dict()})
