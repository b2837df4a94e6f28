"""One streamed POST with bounded retries and an idle timeout instead of a total one.

A long verdict or a long reasoning phase can take minutes; what matters is that the server keeps
sending. The read timeout of httpx applies to each read, so it is exactly an idle timeout: a
stream that goes silent for `idle_timeout_s` is abandoned and retried. Servers that ignore
`stream: true` and answer with one JSON object are handled too.

Every delivery that is given up (a 429/5xx/529, a timeout, an error event in the stream) is
recorded with the tokens it may have cost: the request's input once the server started answering,
and the output streamed so far, counted with our tokenizer.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Collection, Iterator, Mapping
from typing import Any, Protocol

import httpx

from grading.grader import tokens
from grading.grader.backends.base import (
    ContextOverflowError,
    Delivery,
    PermanentBackendError,
    TransientBackendError,
)
from grading.grader.backends.transport import RetryPolicy, _wait_s, error_message

_LIMIT_PATTERNS = (
    re.compile(r"maximum context length is (\d+)"),  # OpenAI, vLLM
    re.compile(r"prompt is too long: \d+ tokens > (\d+) maximum"),  # Anthropic
    re.compile(r"context (?:length|window) (?:of|is) (\d+)"),  # SGLang and others
)
_OVERFLOW_HINTS = (
    "context length",
    "context_length_exceeded",
    "prompt is too long",
    "too many tokens",
)


class StreamError(Exception):
    """The server reported an error inside the stream (e.g. Anthropic's overloaded_error)."""

    def __init__(self, message: str, *, retryable: bool) -> None:
        super().__init__(message)
        self.retryable = retryable


class Accumulator(Protocol):
    """Builds one answer from stream events (or from a whole JSON answer)."""

    def feed(self, event: str, data: Mapping[str, Any]) -> None: ...

    def whole(self, payload: Mapping[str, Any]) -> None: ...

    def streamed_text(self) -> str: ...


_PROMPT_PATTERNS = (
    re.compile(r"\((\d+) in the messages"),  # vLLM
    re.compile(r"messages resulted in (\d+) tokens"),  # OpenAI
    re.compile(r"prompt is too long: (\d+) tokens"),  # Anthropic
)


def _first_int(patterns: tuple[re.Pattern[str], ...], text: str) -> int | None:
    for rx in patterns:
        m = rx.search(text)
        if m:
            return int(m.group(1))
    return None


def classify_client_error(status: int, message: str) -> PermanentBackendError:
    if status in (400, 413) and any(h in message.lower() for h in _OVERFLOW_HINTS):
        return ContextOverflowError(
            f"HTTP {status}: {message}",
            _first_int(_LIMIT_PATTERNS, message),
            _first_int(_PROMPT_PATTERNS, message),
        )
    return PermanentBackendError(f"HTTP {status}: {message}")


def sse_events(lines: Iterator[str]) -> Iterator[tuple[str, str]]:
    """(event name, data) pairs of a server-sent event stream."""
    event, data = "", list[str]()
    for line in lines:
        if line == "":
            if data:
                yield event, "\n".join(data)
            event, data = "", []
        elif line.startswith(":"):
            continue  # a comment / keep-alive
        elif line.startswith("event:"):
            event = line[6:].strip()
        elif line.startswith("data:"):
            data.append(line[5:].removeprefix(" "))
    if data:
        yield event, "\n".join(data)


# Kept whole (C901): one retry loop over one stream: each branch is an HTTP or SSE outcome
def stream_post(  # noqa: C901
    client: httpx.Client,
    url: str,
    *,
    headers: Mapping[str, str],
    body: Mapping[str, Any],
    new_accumulator: Callable[[], Accumulator],
    policy: RetryPolicy,
    idle_timeout_s: float,
    connect_timeout_s: float = 30.0,
    retry_statuses: Collection[int],
    input_estimate: int,
    sleep: Callable[[float], None] = time.sleep,
) -> tuple[Accumulator, list[Delivery]]:
    """POST and read the answer; returns it with the deliveries abandoned before it."""
    timeout = httpx.Timeout(idle_timeout_s, connect=connect_timeout_s)
    abandoned: list[Delivery] = []
    last_problem, retry_after = "", None
    for attempt in range(policy.max_retries + 1):
        if attempt:
            sleep(_wait_s(attempt, policy, retry_after))
        retry_after = None
        acc = new_accumulator()
        started = False  # the server began answering: the input was processed
        try:
            with client.stream(
                "POST", url, json=dict(body), headers=dict(headers), timeout=timeout
            ) as response:
                if response.status_code in retry_statuses:
                    response.read()
                    retry_after = response.headers.get("retry-after")
                    last_problem = f"HTTP {response.status_code}: {error_message(response)}"
                    abandoned.append(Delivery(attempt, f"http {response.status_code}"))
                    continue
                if response.is_error:
                    response.read()
                    raise classify_client_error(response.status_code, error_message(response))
                started = True
                kind = response.headers.get("content-type", "")
                if "text/event-stream" in kind:
                    for event, data in sse_events(response.iter_lines()):
                        if data.strip() == "[DONE]":
                            break
                        try:
                            decoded = json.loads(data)
                        except ValueError as exc:
                            bad = f"bad stream data: {data[:200]!r}"
                            raise StreamError(bad, retryable=True) from exc
                        acc.feed(event, decoded)
                else:
                    payload = json.loads(response.read() or b"null")
                    if not isinstance(payload, dict):
                        raise StreamError("response JSON is not an object", retryable=True)
                    acc.whole(payload)
            return acc, abandoned
        except (httpx.TimeoutException, httpx.TransportError, StreamError, ValueError) as exc:
            if isinstance(exc, StreamError) and not exc.retryable:
                raise PermanentBackendError(str(exc)) from exc
            status = type(exc).__name__
            if isinstance(exc, httpx.ReadTimeout):
                status += f" (silent for {idle_timeout_s:g} s)"
            last_problem = f"{status}: {exc}"
            partial = acc.streamed_text()
            abandoned.append(
                Delivery(
                    attempt,
                    status,
                    input_estimate if started else 0,
                    tokens.count(partial),
                    estimated=True,
                )
            )
    tries = policy.max_retries + 1
    error = TransientBackendError(f"gave up after {tries} attempts: {last_problem}")
    error.deliveries = tuple(abandoned)
    raise error
