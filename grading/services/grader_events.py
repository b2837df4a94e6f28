"""Turn the loop's log records into GraderEvent rows: the run's transcript, bounded in size."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from grading.grader.loop import LogRecord
from grading.models import GraderEvent

# The full tool output the grader saw is already bounded by the tools; keep what an admin reads.
OUTPUT_CHARS = 20_000
# Tool results reappear as messages on the next LLM call; the tool event already holds them.
MESSAGE_CHARS = 4_000


def clean(value: Any) -> Any:
    """PostgreSQL text and jsonb refuse NUL; model output and test logs may contain it."""
    if isinstance(value, str):
        return value.replace("\x00", "\ufffd")
    if isinstance(value, dict):
        return {str(k).replace("\x00", "\ufffd"): clean(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [clean(v) for v in value]
    return value


def _clip(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return text[:limit] + f"\n[… {len(text) - limit} more characters not stored]"


def _clip_message(message: dict[str, Any]) -> dict[str, Any]:
    out = dict(message)
    if isinstance(out.get("content"), str):
        out["content"] = _clip(out["content"], MESSAGE_CHARS)
    return out


# What an admin needs to see of each model call besides the messages.
_CALL_FACTS = (
    "truncated", "usage_estimated", "reasoning_tokens", "estimated_input_tokens",
    "max_output_tokens", "abandoned", "final_phase", "compactions",
)  # fmt: skip


def event_row(run_id: int, record: LogRecord) -> GraderEvent:
    data = record.data
    if record.kind == "llm_call":
        out = data.get("message_out") or {}
        return GraderEvent(
            run_id=run_id,
            seq=record.index,
            kind=GraderEvent.Kind.LLM_CALL,
            name="final" if data.get("final_phase") else "",
            arguments=clean(
                {
                    "messages_in": [_clip_message(m) for m in data.get("messages_in", [])],
                    "message_out": out,
                    "context_messages": data.get("context_messages"),
                    "stop_reason": data.get("stop_reason", ""),
                    **{k: data[k] for k in _CALL_FACTS if k in data},
                }
            ),
            output=clean(_clip(str(out.get("content") or ""), OUTPUT_CHARS)),
            input_tokens=int(data.get("input_tokens") or 0),
            output_tokens=int(data.get("output_tokens") or 0),
            cached_input_tokens=int(data.get("cached_input_tokens") or 0),
            cost_usd=Decimal(str(data["cost_usd"])) if data.get("cost_usd") else None,
            latency_s=float(data.get("latency_s") or 0.0),
        )
    arguments = data.get("arguments")
    return GraderEvent(
        run_id=run_id,
        seq=record.index,
        kind=GraderEvent.Kind.TOOL_CALL,
        name=str(data.get("name", ""))[:100],
        arguments=clean(
            {
                "call_id": data.get("id"),
                # Unparseable arguments arrive as their raw text.
                "arguments": arguments if isinstance(arguments, dict) else {"raw": arguments},
                "tree": data.get("tree"),
                "command": data.get("command"),
                "is_error": bool(data.get("is_error")),
            }
        ),
        output=clean(_clip(str(data.get("output", "")), OUTPUT_CHARS)),
        latency_s=float(data.get("duration_s") or 0.0),
        exit_code=data.get("exit_code"),
    )
