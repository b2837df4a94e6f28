"""What a run has spent, what it must keep for its submission, and what the model is told.

Every limit is checked before a call, against what that call could cost, so a run never ends
past its budget; the final phase starts while there is still enough left to grade every
remaining candidate and rank them.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

from grading.grader.inputs import Budget, Pricing

# Rough output of one grade_candidate call and of submit_ranking, in tokens.
GRADE_OUTPUT = 900
RANK_OUTPUT = 400
GRADES_PER_TURN = 4  # what the final phase plans for; a model may send more at once
WARN_AHEAD_STEPS = 3


@dataclass
class BudgetUse:
    llm_calls: int = 0
    tool_calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    wall_seconds: float = 0.0
    cached_input_tokens: int = 0
    reasoning_tokens: int = 0
    cost_usd: float = 0.0
    usage_estimated: bool = False  # some call's usage came from our tokenizer
    abandoned_input_tokens: int = 0  # of HTTP deliveries given up and retried
    abandoned_output_tokens: int = 0
    truncations: int = 0
    compactions: int = 0
    peak_context: int = 0

    def verdict_fields(self) -> dict[str, Any]:
        """The budget use a verdict records (gagar.verdict.v1 `budget_use`)."""
        keys = ("tool_calls", "llm_calls", "input_tokens", "output_tokens", "wall_seconds")
        return {k: asdict(self)[k] for k in keys}


@dataclass(frozen=True)
class Plan:
    """Where the run stands before its next call."""

    final: bool  # only the submission tools may be used now
    warn: bool  # the final phase is near: tell the model
    stop: str  # non-empty: the next call cannot be afforded at all (the reason)


def reserve_steps(missing: int) -> int:
    """Calls the final phase needs: the missing grades a few per turn, the ranking, one re-ask
    and one reply cut at its output limit."""
    return math.ceil(missing / GRADES_PER_TURN) + 3


def plan(
    budget: Budget,
    use: BudgetUse,
    *,
    missing: int,
    next_input: int,
    max_output: int,
    pricing: Pricing,
    seconds_per_call: float,
) -> Plan:
    steps_left = budget.max_steps - use.llm_calls
    need_steps = reserve_steps(missing)
    need_out = missing * GRADE_OUTPUT + RANK_OUTPUT
    input_left = budget.max_input_tokens - use.input_tokens
    output_left = budget.max_output_tokens - use.output_tokens
    time_left = budget.wall_seconds - use.wall_seconds
    if budget.max_total_tokens is not None:
        total_left = budget.max_total_tokens - use.input_tokens - use.output_tokens
        if total_left < next_input + max_output:
            return Plan(
                True,
                True,
                f"the run's token limit ({budget.max_total_tokens} tokens) would be passed "
                f"(spent {use.input_tokens + use.output_tokens})",
            )
        input_left = min(input_left, total_left - need_out)
    cost_left = None
    if budget.max_usd is not None and pricing.known:
        cost_left = budget.max_usd - use.cost_usd
    if steps_left <= 0:
        return Plan(True, True, f"all {budget.max_steps} model calls are used")
    if input_left < next_input:
        return Plan(True, True, f"the input budget ({budget.max_input_tokens} tokens) is spent")
    if output_left < min(max_output, 512):
        return Plan(True, True, f"the output budget ({budget.max_output_tokens} tokens) is spent")
    if time_left <= 0:
        return Plan(True, True, f"the time budget ({budget.wall_seconds:g} s) is spent")
    if budget.max_usd is not None and pricing.known:
        next_cost = pricing.cost(next_input, 0, max_output)
        if use.cost_usd + next_cost > budget.max_usd:
            return Plan(
                True,
                True,
                f"the run's money limit (${budget.max_usd:g}) would be passed "
                f"(spent ${use.cost_usd:.4f}, the next call may cost ${next_cost:.4f})",
            )
    call_cost = pricing.cost(next_input, 0, GRADE_OUTPUT) if pricing.known else 0.0
    final = (
        steps_left <= need_steps
        or input_left < need_steps * next_input
        or output_left < need_out
        or time_left < need_steps * max(seconds_per_call, 1.0)
        or (cost_left is not None and cost_left < need_steps * call_cost)
    )
    warn = final or (
        steps_left <= need_steps + WARN_AHEAD_STEPS
        or input_left < (need_steps + WARN_AHEAD_STEPS) * next_input
        or output_left < need_out * 1.5
        or time_left < (need_steps + WARN_AHEAD_STEPS) * max(seconds_per_call, 1.0)
    )
    return Plan(final, warn, "")


def note(
    budget: Budget,
    use: BudgetUse,
    *,
    context: int,
    limit: int,
    graded: list[str],
    missing: list[str],
    p: Plan,
) -> str:
    """The running budget the model sees after each turn."""
    left_calls = budget.max_steps - use.llm_calls
    parts = [
        f"[budget] context {context:,} of {limit:,} tokens",
        f"{left_calls} of {budget.max_steps} model calls left",
        f"{max(0, budget.max_input_tokens - use.input_tokens):,} input and "
        f"{max(0, budget.max_output_tokens - use.output_tokens):,} output tokens left",
        f"{max(0.0, budget.wall_seconds - use.wall_seconds):,.0f} s left",
    ]
    text = "; ".join(parts) + "."
    text += f" Graded: {', '.join(graded) or 'none'};"
    text += f" still to grade: {', '.join(missing) or 'none'}."
    if p.final:
        text += (
            " FINAL PHASE: only grade_candidate and submit_ranking are available now. "
            "Grade every remaining candidate, then call submit_ranking."
        )
    elif p.warn:
        text += (
            " WARNING: the final phase (submission tools only) starts in about "
            f"{max(1, left_calls - reserve_steps(len(missing)))} calls: start grading now."
        )
    return text
