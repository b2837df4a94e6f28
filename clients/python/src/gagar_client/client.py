"""Sync and async clients for the GAGAR Review API.

    from gagar_client import Client, Group, Attempt, Task
    with Client("https://gagar.example", token) as gagar:
        gagar.submit([group_a, group_b])               # idempotent; retried if transient
        adv = gagar.wait("run-7", 42, deadline_s=120)  # graded, or GRPO past the deadline
        a = adv.get("run-7/42/django-123", "r0").adv_gagar  # by (group id, attempt id)

Retries: connection errors, timeouts, 502/503/504 and 429 are retried with exponential backoff
and jitter (429 and 503 wait what `Retry-After` says); other 4xx and 500 are not. A submission
carries an `Idempotency-Key` (by default a hash of its content), so a retry after a lost answer
replays the first answer instead of importing twice.
"""

from __future__ import annotations

import asyncio
import hashlib
import random
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from email.utils import parsedate_to_datetime
from pathlib import Path
from typing import Any, Literal
from urllib.parse import quote

import httpx

from gagar_client.bundle import Group, bundle
from gagar_client.errors import ApiError, DeadlineExceeded, GagarError
from gagar_client.models import Advantages

ExportKind = Literal["advantages", "labels", "package"]
ExportFormat = Literal["parquet", "jsonl", "csv"]
TRANSIENT_STATUS = frozenset({429, 502, 503, 504})
# The server waits at most this long in one request (MAX_DEADLINE_S); longer waits loop.
SERVER_MAX_WAIT_S = 600.0


@dataclass(frozen=True)
class RetryPolicy:
    attempts: int = 5
    backoff_s: float = 0.5
    max_backoff_s: float = 30.0
    # A Retry-After longer than this is an answer to give up on, not to sleep through.
    max_retry_after_s: float = 300.0

    def delay(self, attempt: int, response: httpx.Response | None) -> float:
        """Seconds to wait before retry number `attempt` (1-based)."""
        if response is not None:
            after = retry_after_s(response)
            if after is not None:
                return after
        base = min(self.max_backoff_s, self.backoff_s * 2 ** (attempt - 1))
        return float(base * (0.5 + random.random() / 2))


def retry_after_s(response: httpx.Response) -> float | None:
    value = response.headers.get("Retry-After")
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


@dataclass(frozen=True)
class SubmittedGroup:
    id: Any
    group_id: str | None
    run: str
    step: int
    task: str
    outcome: str
    grader_run_id: Any
    grading_status: str | None


@dataclass(frozen=True)
class Submission:
    summary: str
    grader_config: str
    groups: tuple[SubmittedGroup, ...]
    problems: tuple[dict[str, Any], ...]
    replayed: bool
    raw: dict[str, Any] = field(repr=False, compare=False)

    @classmethod
    def from_response(cls, response: httpx.Response) -> Submission:
        body = response.json()
        groups = tuple(
            SubmittedGroup(**{k: g.get(k) for k in SubmittedGroup.__dataclass_fields__})
            for g in body.get("groups", [])
        )
        return cls(
            summary=str(body.get("summary", "")),
            grader_config=str(body.get("grader_config", "")),
            groups=groups,
            problems=tuple(body.get("problems") or ()),
            replayed=response.headers.get("Idempotent-Replayed") == "true",
            raw=body,
        )


def content_key(body: bytes, config: str | None, partial: bool) -> str:
    """The default Idempotency-Key: the same step content always gets the same key."""
    digest = hashlib.sha256(body)
    digest.update(f"\0{config or ''}\0{partial}".encode())
    return "gagar-client-" + digest.hexdigest()[:48]


def _params(**values: Any) -> dict[str, str]:
    out: dict[str, str] = {}
    for k, v in values.items():
        if v is None or v is False:
            continue
        out[k] = "1" if v is True else str(v)
    return out


def _advantage_params(
    *,
    config: str | None,
    lambda_max: float | Literal["default"] | None,
    normalize_std: bool,
    std_ddof: int | None,
    std_eps: float | None,
    deadline: float | None,
) -> dict[str, str]:
    params = _params(config=config, deadline=deadline)
    if lambda_max != "default":
        params["lambda_max"] = "none" if lambda_max is None else str(lambda_max)
    if normalize_std:
        params["normalize_std"] = "1"
        if std_ddof is not None:
            params["std_ddof"] = str(std_ddof)
        if std_eps is not None:
            params["std_eps"] = str(std_eps)
    return params


def _body(groups: Iterable[Group | dict[str, Any]] | bytes) -> bytes:
    return groups if isinstance(groups, bytes) else bundle(groups)


def _raise_for(response: httpx.Response) -> None:
    if response.status_code < 400:
        return
    try:
        body = response.json()
    except ValueError:
        body = None
    raise ApiError.from_response(response.status_code, body, response.text)


class _Base:
    def __init__(
        self,
        base_url: str,
        token: str,
        *,
        timeout_s: float = 60.0,
        retry: RetryPolicy | None = None,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.retry = retry or RetryPolicy()
        self.timeout_s = timeout_s
        self._headers = {
            "Authorization": f"Bearer {token}",
            "Accept": "application/json",
            "User-Agent": "gagar-client/0.1",
        }

    def _should_retry(self, attempt: int, response: httpx.Response | None) -> float | None:
        """Seconds to sleep before retrying, or None to stop."""
        if attempt >= self.retry.attempts:
            return None
        if response is not None and response.status_code not in TRANSIENT_STATUS:
            return None
        delay = self.retry.delay(attempt, response)
        if delay > self.retry.max_retry_after_s:
            return None
        return delay


class Client(_Base):
    """Blocking client (httpx.Client underneath). Use as a context manager or call close()."""

    def __init__(
        self,
        base_url: str,
        token: str,
        *,
        timeout_s: float = 60.0,
        retry: RetryPolicy | None = None,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        super().__init__(base_url, token, timeout_s=timeout_s, retry=retry)
        self._http = httpx.Client(
            base_url=self.base_url, headers=self._headers, timeout=timeout_s, transport=transport
        )

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._http.close()

    def _request(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        attempt = 0
        while True:
            attempt += 1
            try:
                response = self._http.request(method, path, **kwargs)
            except httpx.TransportError:
                delay = self._should_retry(attempt, None)
                if delay is None:
                    raise
                time.sleep(delay)
                continue
            delay = self._should_retry(attempt, response)
            if delay is None:
                _raise_for(response)
                return response
            response.close()
            time.sleep(delay)

    # --- the training loop -------------------------------------------------------------------

    def submit(
        self,
        groups: Iterable[Group | dict[str, Any]] | bytes,
        *,
        config: str | None = None,
        partial: bool = False,
        idempotency_key: str | None = None,
    ) -> Submission:
        """Send one group or a whole step (validated first); safe to retry."""
        body = _body(groups)
        key = idempotency_key or content_key(body, config, partial)
        response = self._request(
            "POST",
            "/api/v1/training/groups",
            content=body,
            params=_params(config=config, partial=partial),
            headers={"Content-Type": "application/x-ndjson", "Idempotency-Key": key},
        )
        return Submission.from_response(response)

    def advantages(
        self,
        run: str,
        step: int,
        *,
        config: str | None = None,
        lambda_max: float | Literal["default"] | None = "default",
        normalize_std: bool = False,
        std_ddof: int | None = None,
        std_eps: float | None = None,
        deadline_s: float | None = None,
    ) -> Advantages:
        """The step's advantages now (pending groups: no rows), or after waiting on the server
        up to `deadline_s` (≤ 600; groups not graded by then come back as plain GRPO)."""
        params = _advantage_params(
            config=config,
            lambda_max=lambda_max,
            normalize_std=normalize_std,
            std_ddof=std_ddof,
            std_eps=std_eps,
            deadline=deadline_s,
        )
        response = self._request(
            "GET",
            f"/api/v1/training/runs/{quote(run, safe='')}/steps/{int(step)}/advantages",
            params=params,
            timeout=self.timeout_s + (deadline_s or 0.0),
        )
        return Advantages.from_dict(response.json())

    def group_advantages(self, group_db_id: int, **kwargs: Any) -> Advantages:
        deadline_s = kwargs.pop("deadline_s", None)
        params = _advantage_params(
            config=kwargs.pop("config", None),
            lambda_max=kwargs.pop("lambda_max", "default"),
            normalize_std=kwargs.pop("normalize_std", False),
            std_ddof=kwargs.pop("std_ddof", None),
            std_eps=kwargs.pop("std_eps", None),
            deadline=deadline_s,
        )
        if kwargs:
            raise TypeError(f"unexpected arguments {sorted(kwargs)}")
        response = self._request(
            "GET",
            f"/api/v1/training/groups/{int(group_db_id)}/advantages",
            params=params,
            timeout=self.timeout_s + (deadline_s or 0.0),
        )
        return Advantages.from_dict(response.json())

    def wait(self, run: str, step: int, *, deadline_s: float, **kwargs: Any) -> Advantages:
        """Wait until every group of the step is graded or `deadline_s` passed (any length: the
        wait is split into server-side waits of ≤ 600 s). What is not graded by then is plain
        GRPO, flagged `fallback` with reason `deadline`."""
        if deadline_s < 0:
            raise DeadlineExceeded("deadline_s must be ≥ 0")
        end = time.monotonic() + deadline_s
        while True:
            remaining = max(0.0, end - time.monotonic())
            chunk = min(remaining, SERVER_MAX_WAIT_S)
            result = self.advantages(run, step, deadline_s=chunk, **kwargs)
            still_waiting = any(g.fallback_reason == "deadline" for g in result.groups)
            if not still_waiting or end - time.monotonic() <= 0:
                return result

    # --- reads -------------------------------------------------------------------------------

    def _pages(self, path: str, params: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        url: str | None = path
        query: Mapping[str, Any] | None = params
        while url:
            body = self._request("GET", url, params=query).json()
            out += body["results"]
            url, query = body.get("next"), None
        return out

    def runs(self) -> list[dict[str, Any]]:
        return self._pages("/api/v1/runs")

    def steps(self, run: str) -> list[dict[str, Any]]:
        return self._pages(f"/api/v1/runs/{quote(run, safe='')}/steps")

    def grader_runs(self, group_db_id: int, *, config: str | None = None) -> list[dict[str, Any]]:
        body = self._request(
            "GET", f"/api/v1/groups/{int(group_db_id)}/grader-runs", params=_params(config=config)
        ).json()
        results: list[dict[str, Any]] = body["results"]
        return results

    def verdicts(self, group_db_id: int, *, config: str | None = None) -> list[dict[str, Any]]:
        body = self._request(
            "GET", f"/api/v1/groups/{int(group_db_id)}/verdicts", params=_params(config=config)
        ).json()
        results: list[dict[str, Any]] = body["results"]
        return results

    def labels(self, *, page_size: int = 500, **filters: Any) -> list[dict[str, Any]]:
        """Calibrated tier labels: one row per attempt and grader configuration."""
        return self._pages("/api/v1/labels", _params(page_size=page_size, **filters))

    def export(
        self,
        kind: ExportKind,
        dest: Path | str,
        *,
        format: ExportFormat = "parquet",
        **filters: Any,
    ) -> Path:
        """Stream an export (a zip of its files and manifest) to `dest`, block by block."""
        path = Path(dest)
        params = _params(format=format, **filters)
        attempt = 0
        while True:
            attempt += 1
            try:
                with self._http.stream(
                    "GET", f"/api/v1/exports/{kind}", params=params, timeout=None
                ) as response:
                    delay = self._should_retry(attempt, response)
                    if delay is None:
                        if response.status_code >= 400:
                            response.read()
                            _raise_for(response)
                        _write_stream(response.iter_bytes(), path)
                        return path
            except httpx.TransportError:
                delay = self._should_retry(attempt, None)
                if delay is None:
                    raise
            time.sleep(delay)


def _write_stream(chunks: Iterable[bytes], path: Path) -> None:
    partial = path.with_name(path.name + ".partial")
    with partial.open("wb") as out:
        for chunk in chunks:
            out.write(chunk)
    partial.replace(path)


class AsyncClient(_Base):
    """The same calls for asyncio trainers (httpx.AsyncClient underneath)."""

    def __init__(
        self,
        base_url: str,
        token: str,
        *,
        timeout_s: float = 60.0,
        retry: RetryPolicy | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        super().__init__(base_url, token, timeout_s=timeout_s, retry=retry)
        self._http = httpx.AsyncClient(
            base_url=self.base_url, headers=self._headers, timeout=timeout_s, transport=transport
        )

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        await self._http.aclose()

    async def _request(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        attempt = 0
        while True:
            attempt += 1
            try:
                response = await self._http.request(method, path, **kwargs)
            except httpx.TransportError:
                delay = self._should_retry(attempt, None)
                if delay is None:
                    raise
                await asyncio.sleep(delay)
                continue
            delay = self._should_retry(attempt, response)
            if delay is None:
                _raise_for(response)
                return response
            await response.aclose()
            await asyncio.sleep(delay)

    async def submit(
        self,
        groups: Iterable[Group | dict[str, Any]] | bytes,
        *,
        config: str | None = None,
        partial: bool = False,
        idempotency_key: str | None = None,
    ) -> Submission:
        body = _body(groups)
        key = idempotency_key or content_key(body, config, partial)
        response = await self._request(
            "POST",
            "/api/v1/training/groups",
            content=body,
            params=_params(config=config, partial=partial),
            headers={"Content-Type": "application/x-ndjson", "Idempotency-Key": key},
        )
        return Submission.from_response(response)

    async def advantages(
        self,
        run: str,
        step: int,
        *,
        config: str | None = None,
        lambda_max: float | Literal["default"] | None = "default",
        normalize_std: bool = False,
        std_ddof: int | None = None,
        std_eps: float | None = None,
        deadline_s: float | None = None,
    ) -> Advantages:
        params = _advantage_params(
            config=config,
            lambda_max=lambda_max,
            normalize_std=normalize_std,
            std_ddof=std_ddof,
            std_eps=std_eps,
            deadline=deadline_s,
        )
        response = await self._request(
            "GET",
            f"/api/v1/training/runs/{quote(run, safe='')}/steps/{int(step)}/advantages",
            params=params,
            timeout=self.timeout_s + (deadline_s or 0.0),
        )
        return Advantages.from_dict(response.json())

    async def wait(self, run: str, step: int, *, deadline_s: float, **kwargs: Any) -> Advantages:
        if deadline_s < 0:
            raise DeadlineExceeded("deadline_s must be ≥ 0")
        end = time.monotonic() + deadline_s
        while True:
            remaining = max(0.0, end - time.monotonic())
            result = await self.advantages(
                run, step, deadline_s=min(remaining, SERVER_MAX_WAIT_S), **kwargs
            )
            still_waiting = any(g.fallback_reason == "deadline" for g in result.groups)
            if not still_waiting or end - time.monotonic() <= 0:
                return result

    async def labels(self, *, page_size: int = 500, **filters: Any) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        url: str | None = "/api/v1/labels"
        query: dict[str, str] | None = _params(page_size=page_size, **filters)
        while url:
            body = (await self._request("GET", url, params=query)).json()
            out += body["results"]
            url, query = body.get("next"), None
        return out

    async def verdicts(
        self, group_db_id: int, *, config: str | None = None
    ) -> list[dict[str, Any]]:
        response = await self._request(
            "GET", f"/api/v1/groups/{int(group_db_id)}/verdicts", params=_params(config=config)
        )
        results: list[dict[str, Any]] = response.json()["results"]
        return results


__all__ = [
    "ApiError",
    "AsyncClient",
    "Client",
    "GagarError",
    "RetryPolicy",
    "Submission",
]
