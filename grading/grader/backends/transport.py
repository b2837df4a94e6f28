"""HTTP plumbing shared by the model backends: one JSON POST with bounded retries.

Kept apart from the API-specific modules so both backends classify errors the same way: rate
limits, 5xx and network failures are transient (retried here, then `TransientBackendError`); any
other 4xx is permanent and carries the server's own error message.
"""

from __future__ import annotations

import email.utils
import functools
import json
import ssl
import time
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from typing import Any

import httpx

from grading.grader import tokens
from grading.grader.backends.base import PermanentBackendError, TransientBackendError

RETRYABLE_STATUSES: frozenset[int] = frozenset({408, 429, 500, 502, 503, 504})


@functools.cache
def _ssl_context() -> ssl.SSLContext:
    """One verifying TLS context per process, as httpx would build it (certifi, SSL_CERT_FILE):
    building one loads the whole CA bundle (~25 ms of CPU), which every run's client did, even
    for a plain-HTTP endpoint. An SSLContext is safe to share between threads."""
    return httpx.create_ssl_context()


@dataclass(frozen=True)
class RetryPolicy:
    max_retries: int = 3
    backoff_s: float = 1.0  # first wait; doubles on each retry
    max_wait_s: float = 30.0  # caps both our backoff and the server's Retry-After


def post_json(
    client: httpx.Client,
    url: str,
    *,
    headers: Mapping[str, str],
    body: Mapping[str, Any],
    policy: RetryPolicy,
    timeout_s: float,
    retry_statuses: Collection[int] = RETRYABLE_STATUSES,
    sleep: Callable[[float], None] = time.sleep,
) -> dict[str, Any]:
    """POST `body` as JSON and return the decoded JSON object of a 2xx answer."""
    last_problem = ""
    retry_after: str | None = None
    for attempt in range(policy.max_retries + 1):
        if attempt:
            sleep(_wait_s(attempt, policy, retry_after))
        retry_after = None
        try:
            response = client.post(url, json=dict(body), headers=dict(headers), timeout=timeout_s)
        except httpx.TransportError as exc:  # timeouts, refused connections, resets
            last_problem = f"{type(exc).__name__}: {exc}"
            continue
        if response.status_code in retry_statuses:
            retry_after = response.headers.get("retry-after")
            last_problem = f"HTTP {response.status_code}: {error_message(response)}"
            continue
        if response.is_error:
            raise PermanentBackendError(f"HTTP {response.status_code}: {error_message(response)}")
        try:
            decoded = response.json()
        except ValueError as exc:
            raise TransientBackendError(f"response is not JSON: {response.text[:200]!r}") from exc
        if not isinstance(decoded, dict):
            raise TransientBackendError("response JSON is not an object")
        return decoded
    raise TransientBackendError(f"gave up after {policy.max_retries + 1} attempts: {last_problem}")


def _wait_s(attempt: int, policy: RetryPolicy, retry_after: str | None) -> float:
    server_wait = parse_retry_after(retry_after) if retry_after else None
    wait = server_wait if server_wait is not None else policy.backoff_s * 2 ** (attempt - 1)
    return max(0.0, min(wait, policy.max_wait_s))


def parse_retry_after(value: str) -> float | None:
    """Seconds to wait from a Retry-After header: delta-seconds or an HTTP date."""
    value = value.strip()
    try:
        return float(value)
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return when.timestamp() - time.time()


def error_message(response: httpx.Response) -> str:
    """The server's own explanation; both APIs use {"error": {"message": ...}}."""
    try:
        payload = response.json()
    except ValueError:
        return response.text[:500] or response.reason_phrase
    if isinstance(payload, dict):
        err = payload.get("error")
        if isinstance(err, dict) and isinstance(err.get("message"), str):
            return str(err["message"])
        if isinstance(err, str):
            return err
    return response.text[:500]


def parse_tool_arguments(raw: object) -> tuple[dict[str, Any] | None, str, str | None]:
    """Decode a tool call's arguments: (arguments, raw text, error).

    Models do send broken JSON; the loop answers such a call with the error instead of crashing.
    """
    if isinstance(raw, dict):  # some servers already decode the arguments
        return raw, json.dumps(raw), None
    text = raw if isinstance(raw, str) else json.dumps(raw)
    if text.strip() == "":
        return {}, text, None  # a tool without parameters
    try:
        decoded = json.loads(text)
    except ValueError as exc:
        return None, text, f"arguments are not valid JSON: {exc}"
    if not isinstance(decoded, dict):
        return None, text, f"arguments must be a JSON object, got {type(decoded).__name__}"
    return decoded, text, None


class HttpBackend:
    """What the HTTP backends share: connection, retry policy and client ownership."""

    def __init__(
        self,
        base_url: str,
        api_key: str,
        model: str,
        *,
        timeout_s: float = 120.0,
        max_retries: int = 3,
        backoff_s: float = 1.0,
        max_wait_s: float = 30.0,
        client: httpx.Client | None = None,
        sleep: Callable[[float], None] = time.sleep,
        stream: bool = True,
        idle_timeout_s: float | None = None,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.api_key = api_key
        self.model = model
        self.timeout_s = timeout_s
        # Streaming: the timeout is per read (silence), not for the whole answer.
        self.stream = stream
        self.idle_timeout_s = idle_timeout_s if idle_timeout_s is not None else timeout_s
        self.policy = RetryPolicy(
            max_retries=max_retries, backoff_s=backoff_s, max_wait_s=max_wait_s
        )
        self._owns_client = client is None
        self._client = client or httpx.Client(timeout=timeout_s, verify=_ssl_context())
        # One backend per run: the request estimate counts each message of its conversation once.
        self._estimate = tokens.RequestCounter()
        self._sleep = sleep

    def close(self) -> None:
        if self._owns_client:
            self._client.close()

    def _post(
        self,
        path: str,
        headers: Mapping[str, str],
        body: Mapping[str, Any],
        retry_statuses: Collection[int] = RETRYABLE_STATUSES,
    ) -> tuple[dict[str, Any], float]:
        """The decoded answer and the seconds it took, retries included: that is what the
        grading budget actually spent waiting."""
        started = time.monotonic()
        payload = post_json(
            self._client,
            f"{self.base_url}{path}",
            headers=headers,
            body=body,
            policy=self.policy,
            timeout_s=self.timeout_s,
            retry_statuses=retry_statuses,
            sleep=self._sleep,
        )
        return payload, time.monotonic() - started

    def _get(self, path: str, headers: Mapping[str, str]) -> dict[str, Any] | None:
        """A small GET (model information); None when the server does not answer it."""
        try:
            response = self._client.get(
                f"{self.base_url}{path}", headers=dict(headers), timeout=min(self.timeout_s, 30)
            )
        except httpx.TransportError:
            return None
        if response.is_error:
            return None
        try:
            decoded = response.json()
        except ValueError:
            return None
        return decoded if isinstance(decoded, dict) else None
