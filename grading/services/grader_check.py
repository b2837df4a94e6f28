"""`manage.py grader_check`: try a configuration's endpoint on a tiny task before grading with it.

Two small calls: the model is asked to call a tool, then to answer the tool's result. The report
says in plain words whether tool calling works, what context window and output limit the server
states, whether the model reasons, whether the server reports usage, and what the calls cost.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from grading.grader.backends.base import (
    Backend,
    BackendError,
    CallOptions,
    Completion,
    Message,
    ToolSpec,
)
from grading.grader.backends.registry import BackendConfigError
from grading.models import GraderConfig
from grading.services.grader_inputs import backend_for, context_window_for, pricing_for

ADD = ToolSpec(
    "add",
    "Add two integers.",
    {
        "type": "object",
        "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
        "required": ["a", "b"],
        "additionalProperties": False,
    },
)
TASK = [
    Message("system", "You are checking a tool-calling setup. Use the tools you are given."),
    Message("user", "What is 2 + 3? Call the add tool with a=2 and b=3, then answer."),
]
LIMIT_HINTS = {
    "max_tokens": "the server refuses max_tokens: a reasoning model? set options reasoning=true",
    "temperature": "the server refuses a temperature: set options reasoning=true",
}


@dataclass
class CheckReport:
    config: str
    ok: bool = False
    lines: list[str] = field(default_factory=list)

    def say(self, text: str) -> None:
        self.lines.append(text)


def _advice(exc: Exception) -> str:
    text = str(exc)
    hints = [hint for key, hint in LIMIT_HINTS.items() if key in text]
    return f"{text}" + (f" ({'; '.join(hints)})" if hints else "")


def _ask(backend: Backend, messages: list[Message], choice: str) -> Completion:
    return backend.complete(
        messages, [ADD], max_output_tokens=1024, temperature=0.0, seed=0,
        options=CallOptions(tool_choice=choice),
    )  # fmt: skip


def grader_config_check(*, config: GraderConfig) -> CheckReport:
    report = CheckReport(config.name)
    offline = (
        GraderConfig.Backend.ANALYSIS,
        GraderConfig.Backend.HEURISTIC,
        GraderConfig.Backend.SCRIPTED,
    )
    if config.backend in offline:
        report.ok = True
        report.say(f"{config.name} uses the {config.backend} backend: no model endpoint to check.")
        return report
    try:
        backend = backend_for(config)
    except BackendConfigError as exc:
        report.say(f"configuration problem: {exc}")
        return report
    report.say(f"endpoint: {getattr(backend, 'base_url', '?')}, model {backend.model}")
    window = context_window_for(config, backend)
    limits = getattr(backend, "limits", None)
    stated = limits() if callable(limits) else None
    report.say(f"context window: {window.window:,} tokens (from {window.source})")
    if stated is not None and stated.max_output_tokens:
        report.say(f"output limit: {stated.max_output_tokens:,} tokens (from {stated.source})")
    else:
        report.say("output limit: not stated by the server; the loop asks for at most "
                   "max_output_tokens_per_call and answers replies cut at the limit")  # fmt: skip
    pricing = pricing_for(config)
    calls: list[Completion] = []
    try:
        first = _ask(backend, list(TASK), "auto")
        calls.append(first)
        call = next((c for c in first.message.tool_calls if c.name == "add"), None)
        if call is None:
            forced = _ask(backend, list(TASK), "required")
            calls.append(forced)
            call = next((c for c in forced.message.tool_calls if c.name == "add"), None)
            if call is not None:
                report.say("tool calling: works only when forced (tool_choice); the loop forces "
                           "the submission in its final phase")  # fmt: skip
        if call is None:
            report.say("tool calling: DOES NOT WORK: the model answered without calling the tool")
        elif call.arguments != {"a": 2, "b": 3}:
            report.say(f"tool calling: the call came back malformed: {call.raw_arguments[:200]!r}")
        else:
            if len(calls) == 1:
                report.say("tool calling: works (the model called add(a=2, b=3) by itself)")
            history = [
                *TASK,
                calls[-1].message,
                Message("tool", "5", tool_call_id=call.id, name="add"),
            ]
            calls.append(_ask(backend, history, "auto"))
            report.ok = True
    except BackendError as exc:
        report.say(f"the endpoint refused the request: {_advice(exc)}")
    finally:
        close = getattr(backend, "close", None)
        if callable(close):
            close()
    if calls:
        thinks = any(c.message.reasoning or c.reasoning_tokens for c in calls)
        report.say("reasoning: " + ("the model returns reasoning" if thinks else "none returned"))
        estimated = any(c.usage_estimated for c in calls)
        report.say(
            "usage: NOT reported by the server; tokens are estimated with our tokenizer and "
            "flagged on each run"
            if estimated
            else "usage: reported by the server"
        )
        tin = sum(c.input_tokens for c in calls)
        tout = sum(c.output_tokens for c in calls)
        cached = sum(c.cached_input_tokens for c in calls)
        cost = sum(
            pricing.cost(c.input_tokens, c.cached_input_tokens, c.output_tokens) for c in calls
        )
        price = f"${cost:.6f}" if pricing.known else "unknown (no prices configured)"
        report.say(
            f"{len(calls)} calls: {tin} input ({cached} cached), {tout} output tokens; cost {price}"
        )
    return report
