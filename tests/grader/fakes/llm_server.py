"""A real HTTP server on 127.0.0.1 that plays scripted LLM API answers and records requests.

It speaks whatever the test enqueues, so one server serves both the OpenAI chat-completions and
the Anthropic Messages tests; helpers below build each API's usual answers. A `handler` instead
computes each answer from the request (the provider personalities in `personalities.py`); an
answer with `events` is sent as a server-sent-event stream, one flushed write per event.
"""

from __future__ import annotations

import contextlib
import json
import threading
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass(frozen=True)
class FakeResponse:
    status: int = 200
    body: dict[str, Any] | str = field(default_factory=dict)
    headers: dict[str, str] = field(default_factory=dict)
    delay_s: float = 0.0  # wait before answering, to outlast a client timeout
    # A server-sent-event stream instead of `body`: (event name or "", data) pairs.
    events: tuple[tuple[str, str], ...] = ()
    stall_after: int | None = None  # stop sending (and hang) after this many events
    event_delay_s: float = 0.0  # pause before each event: a slow but steady stream


@dataclass(frozen=True)
class RecordedRequest:
    method: str
    path: str
    headers: dict[str, str]  # lower-cased names
    body: Any  # decoded JSON, or the raw text when it is not JSON


class FakeLLMServer:
    def __init__(
        self,
        handler: Callable[[RecordedRequest], FakeResponse] | None = None,
        *,
        concurrent: bool = False,
    ) -> None:
        # `concurrent`: the handler is safe to call from many request threads at once (and
        # requests are not kept), e.g. the throughput benchmark's many conversations. By
        # default calls are serialized, as the stateful personalities need.
        self.handler = handler
        self.concurrent = concurrent
        self.requests: list[RecordedRequest] = []
        self._queue: deque[FakeResponse] = deque()
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler_class())
        self._httpd.daemon_threads = True
        self._httpd.block_on_close = False
        self._thread = threading.Thread(target=self._httpd.serve_forever, args=(0.05,), daemon=True)

    @property
    def url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host!s}:{port}"

    def start(self) -> FakeLLMServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()  # releases handlers still sleeping on a delay
        if self._thread.is_alive():
            self._httpd.shutdown()  # blocks until serve_forever returns, so only when it runs
        self._httpd.server_close()

    def enqueue(self, *responses: FakeResponse) -> None:
        with self._lock:
            self._queue.extend(responses)

    @property
    def pending(self) -> int:
        return len(self._queue)

    def _next(self, request: RecordedRequest) -> FakeResponse:
        if self.concurrent and self.handler is not None:
            return self.handler(request)
        with self._lock:
            if request.method == "GET" and self.handler is None:
                # Model information is not scripted: GETs never take a queued answer.
                return FakeResponse(404, error_body("fake server: no such endpoint"))
            self.requests.append(request)
            if self._queue:
                return self._queue.popleft()
            if self.handler is not None:
                return self.handler(request)
        return FakeResponse(500, error_body("fake server: no scripted response left"))

    # Kept whole (C901): the fake server's request routes, one branch each.
    def _handler_class(self) -> type[BaseHTTPRequestHandler]:  # noqa: C901
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self) -> None:
                headers = {k.lower(): v for k, v in self.headers.items()}
                self._answer(server._next(RecordedRequest("GET", self.path, headers, None)))

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                text = self.rfile.read(length).decode("utf-8")
                try:
                    body: Any = json.loads(text)
                except ValueError:
                    body = text
                headers = {k.lower(): v for k, v in self.headers.items()}
                self._answer(server._next(RecordedRequest("POST", self.path, headers, body)))

            def _stream(self, reply: FakeResponse) -> None:
                self.send_response(reply.status)
                self.send_header("content-type", "text/event-stream")
                self.send_header("connection", "close")
                self.end_headers()
                self.close_connection = True
                for n, (event, data) in enumerate(reply.events):
                    if reply.stall_after is not None and n >= reply.stall_after:
                        server._stopping.wait(60)
                        return
                    if reply.event_delay_s and server._stopping.wait(reply.event_delay_s):
                        return
                    head = f"event: {event}\n" if event else ""
                    self.wfile.write(f"{head}data: {data}\n\n".encode())
                    self.wfile.flush()

            def _answer(self, reply: FakeResponse) -> None:
                if reply.delay_s and server._stopping.wait(reply.delay_s):
                    return
                if reply.events:
                    with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                        self._stream(reply)
                    return
                payload = reply.body if isinstance(reply.body, str) else json.dumps(reply.body)
                data = payload.encode("utf-8")
                try:
                    self.send_response(reply.status)
                    self.send_header("content-type", "application/json")
                    self.send_header("content-length", str(len(data)))
                    self.send_header("connection", "close")
                    self.close_connection = True
                    for name, value in reply.headers.items():
                        self.send_header(name, value)
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client timed out and hung up, as the test intended

            def log_message(self, format: str, *args: Any) -> None:
                pass  # keep pytest output clean

        return Handler


def error_body(message: str, kind: str = "error") -> dict[str, Any]:
    return {"type": "error", "error": {"type": kind, "message": message}}


def openai_response(
    content: str | None = None,
    tool_calls: Sequence[tuple[str, str, str]] = (),
    *,
    prompt_tokens: int = 11,
    completion_tokens: int = 7,
    finish_reason: str | None = None,
) -> dict[str, Any]:
    """A chat-completions answer; tool calls as (id, name, arguments JSON text)."""
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if tool_calls:
        message["tool_calls"] = [
            {"id": i, "type": "function", "function": {"name": n, "arguments": a}}
            for i, n, a in tool_calls
        ]
    return {
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "model": "fake-model",
        "choices": [
            {
                "index": 0,
                "message": message,
                "finish_reason": finish_reason or ("tool_calls" if tool_calls else "stop"),
            }
        ],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        },
    }


def anthropic_response(
    text: str | None = None,
    tool_uses: Sequence[tuple[str, str, dict[str, Any]]] = (),
    *,
    input_tokens: int = 13,
    output_tokens: int = 5,
    stop_reason: str | None = None,
) -> dict[str, Any]:
    """A Messages answer; tool uses as (id, name, input object)."""
    content: list[dict[str, Any]] = [{"type": "text", "text": text}] if text else []
    content += [{"type": "tool_use", "id": i, "name": n, "input": a} for i, n, a in tool_uses]
    return {
        "id": "msg_fake",
        "type": "message",
        "role": "assistant",
        "model": "fake-model",
        "content": content,
        "stop_reason": stop_reason or ("tool_use" if tool_uses else "end_turn"),
        "usage": {"input_tokens": input_tokens, "output_tokens": output_tokens},
    }
