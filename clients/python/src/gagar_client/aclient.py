"""The asyncio client (httpx.AsyncClient underneath): the same calls as `Client`."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, Literal
from urllib.parse import quote

import httpx

from gagar_client._common import (
    SERVER_MAX_WAIT_S,
    ExportFormat,
    ExportKind,
    RetryPolicy,
    Submission,
    _advantage_params,
    _Base,
    _body,
    _params,
    _raise_for,
    content_key,
    warn_if_capped,
)
from gagar_client.bundle import Group
from gagar_client.errors import DeadlineExceeded
from gagar_client.models import Advantages, GraderRun, Verdict

__all__ = ["AsyncClient"]


class AsyncClient(_Base):
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

    async def _advantages(self, path: str, deadline_s: float | None, **kw: Any) -> Advantages:
        params = _advantage_params(
            config=kw.pop("config", None),
            lambda_max=kw.pop("lambda_max", "default"),
            normalize_std=kw.pop("normalize_std", False),
            std_ddof=kw.pop("std_ddof", None),
            std_eps=kw.pop("std_eps", None),
            deadline=deadline_s,
        )
        if kw:
            raise TypeError(f"unexpected arguments {sorted(kw)}")
        response = await self._request(
            "GET", path, params=params, timeout=self.timeout_s + (deadline_s or 0.0)
        )
        return Advantages.from_dict(response.json())

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
        return await self._advantages(
            f"/api/v1/training/runs/{quote(run, safe='')}/steps/{int(step)}/advantages",
            deadline_s,
            config=config,
            lambda_max=lambda_max,
            normalize_std=normalize_std,
            std_ddof=std_ddof,
            std_eps=std_eps,
        )

    async def group_advantages(
        self, group_db_id: int, *, deadline_s: float | None = None, **kwargs: Any
    ) -> Advantages:
        path = f"/api/v1/training/groups/{int(group_db_id)}/advantages"
        return await self._advantages(path, deadline_s, **kwargs)

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

    async def _pages(
        self, path: str, params: Mapping[str, Any] | None = None
    ) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        url: str | None = path
        query: Mapping[str, Any] | None = params
        while url:
            body = (await self._request("GET", url, params=query)).json()
            if url == path:
                warn_if_capped(query, body)
            out += body["results"]
            url, query = body.get("next"), None
        return out

    async def runs(self) -> list[dict[str, Any]]:
        return await self._pages("/api/v1/runs")

    async def steps(self, run: str) -> list[dict[str, Any]]:
        return await self._pages(f"/api/v1/runs/{quote(run, safe='')}/steps")

    async def grader_runs(self, group_db_id: int, *, config: str | None = None) -> list[GraderRun]:
        response = await self._request(
            "GET", f"/api/v1/groups/{int(group_db_id)}/grader-runs", params=_params(config=config)
        )
        return [GraderRun.from_dict(r) for r in response.json()["results"]]

    async def verdicts(self, group_db_id: int, *, config: str | None = None) -> list[Verdict]:
        response = await self._request(
            "GET", f"/api/v1/groups/{int(group_db_id)}/verdicts", params=_params(config=config)
        )
        return [Verdict.from_dict(r) for r in response.json()["results"]]

    async def labels(self, *, page_size: int = 500, **filters: Any) -> list[dict[str, Any]]:
        return await self._pages("/api/v1/labels", _params(page_size=page_size, **filters))

    async def export(
        self,
        kind: ExportKind,
        dest: Path | str,
        *,
        format: ExportFormat = "parquet",
        **filters: Any,
    ) -> Path:
        path = Path(dest)
        params = _params(format=format, **filters)
        attempt = 0
        while True:
            attempt += 1
            try:
                async with self._http.stream(
                    "GET", f"/api/v1/exports/{kind}", params=params, timeout=None
                ) as response:
                    delay = self._should_retry(attempt, response)
                    if delay is None:
                        if response.status_code >= 400:
                            await response.aread()
                            _raise_for(response)
                        partial = path.with_name(path.name + ".partial")
                        with partial.open("wb") as out:
                            async for chunk in response.aiter_bytes():
                                out.write(chunk)
                        partial.replace(path)
                        return path
            except httpx.TransportError:
                delay = self._should_retry(attempt, None)
                if delay is None:
                    raise
            await asyncio.sleep(delay)
