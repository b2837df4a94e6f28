"""The blocking client (httpx.Client underneath); `AsyncClient` has the same calls."""

from __future__ import annotations

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
    _write_stream,
    content_key,
    warn_if_capped,
)
from gagar_client.bundle import Group
from gagar_client.errors import DeadlineExceeded
from gagar_client.models import Advantages, GraderRun, Verdict

__all__ = ["Client", "RetryPolicy", "Submission"]


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
            if url == path:
                warn_if_capped(query, body)
            out += body["results"]
            url, query = body.get("next"), None
        return out

    def runs(self) -> list[dict[str, Any]]:
        return self._pages("/api/v1/runs")

    def steps(self, run: str) -> list[dict[str, Any]]:
        return self._pages(f"/api/v1/runs/{quote(run, safe='')}/steps")

    def grader_runs(self, group_db_id: int, *, config: str | None = None) -> list[GraderRun]:
        """Every grader run of a group (by its database id: `group_db_id` of its rows)."""
        body = self._request(
            "GET", f"/api/v1/groups/{int(group_db_id)}/grader-runs", params=_params(config=config)
        ).json()
        return [GraderRun.from_dict(r) for r in body["results"]]

    def verdicts(self, group_db_id: int, *, config: str | None = None) -> list[Verdict]:
        """A group's succeeded grader runs with their grades, keyed by (group id, attempt id)."""
        body = self._request(
            "GET", f"/api/v1/groups/{int(group_db_id)}/verdicts", params=_params(config=config)
        ).json()
        return [Verdict.from_dict(r) for r in body["results"]]

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
