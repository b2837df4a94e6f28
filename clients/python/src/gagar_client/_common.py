"""What the sync and async clients share: retry policy, request parameters, answers.

The clients themselves are `gagar_client.client.Client` and `gagar_client.aclient.AsyncClient`.
Their calls, for reference:

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

import hashlib
import random
import time
import warnings
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from email.utils import parsedate_to_datetime
from pathlib import Path
from typing import Any, Literal

import httpx

from gagar_client.bundle import Group, bundle
from gagar_client.errors import ApiError

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
    """One submitted group (`gagar.v2`): `group_id` is the join key of its advantage rows,
    `group_db_id` the database id the per-group endpoints take."""

    group_id: str
    group_db_id: int
    run: str
    step: int
    task: str
    outcome: str
    grader_run_id: str | None
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


def warn_if_capped(params: Mapping[str, Any] | None, body: Mapping[str, Any]) -> None:
    """Warn when the server answered a first page smaller than the `page_size` asked for while
    more pages follow: it caps page sizes (GAGAR_API_MAX_PAGE_SIZE). Every row still arrives
    (the client follows `next`), but in more requests than the caller planned; saying so beats
    the silent clamp, and refusing would break callers whose result is right either way."""
    asked = (params or {}).get("page_size")
    got = len(body.get("results") or [])
    if asked is not None and body.get("next") and got < int(asked):
        warnings.warn(
            f"page_size={asked} is over the server's limit: it sends {got} rows a page "
            "(GAGAR_API_MAX_PAGE_SIZE); all rows are fetched, in more requests",
            stacklevel=3,
        )


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


def _write_stream(chunks: Iterable[bytes], path: Path) -> None:
    partial = path.with_name(path.name + ".partial")
    with partial.open("wb") as out:
        for chunk in chunks:
            out.write(chunk)
    partial.replace(path)
