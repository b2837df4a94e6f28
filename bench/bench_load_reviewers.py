"""Concurrent reviewers against gunicorn on loopback: 0 errors, 0 lost or duplicated writes.

Each simulated reviewer (a thread with its own httpx session) logs in, loads the queue, starts the
campaign's group, then until the deadline autosaves label notes every few seconds, posts timing
events, reloads the page now and then and writes fix requests; near the end it completes every
label and submits. Afterwards every acknowledged write is looked up in the database: the last
acknowledged note of each candidate is the stored one, and every acknowledged fix request is
stored exactly once. Prints requests/s and p50/p95/p99 latency.

Usage: .venv/bin/python bench/bench_load_reviewers.py [--reviewers 50] [--seconds 60]
  env: BENCH_DATABASE_URL (default postgres://postgres@127.0.0.1:5432/gagar_bench_load; the
       database is dropped and created afresh). Only ever targets 127.0.0.1; stops by itself.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import statistics
import sys
import tempfile
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from grading.domain.reviews_file import CRITERIA  # noqa: E402

_TOKEN = re.compile(r"/review/a/(\d+)/c/([A-Za-z0-9_-]+)/label")
# A candidate's fix form, then the first file of its diff.
_FILE = re.compile(
    r'/c/([A-Za-z0-9_-]+)/fix"[^>]*>.*?<select name="path"><option value="([^"]+)"', re.S
)
_CSRF = re.compile(r'name="csrfmiddlewaretoken" value="([^"]+)"')


def loopback_only(base_url: str) -> str:
    """The load generator refuses any target but 127.0.0.1: it must never load someone else."""
    parts = urlsplit(base_url)
    if parts.scheme != "http" or parts.hostname != "127.0.0.1":
        raise SystemExit(f"refusing to load {base_url!r}: only http://127.0.0.1:<port> is allowed")
    return base_url.rstrip("/")


@dataclass
class Tally:
    latencies: list[float] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    notes: dict[str, str] = field(default_factory=dict)  # token -> last acknowledged note
    fixes: list[tuple[str, str]] = field(default_factory=list)  # acknowledged (token, text)
    submitted: list[int] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)


class Window:
    """The timed window, opened once every reviewer has logged in and opened a group: logins hash
    passwords and are slow on a loaded machine, and must not eat the time the window measures."""

    def __init__(self, reviewers: int, seconds: float) -> None:
        self.seconds = seconds
        self.deadline = self.submit_at = 0.0
        self._barrier = threading.Barrier(reviewers, action=self._open, timeout=600)

    def _open(self) -> None:
        now = time.monotonic()
        self.deadline, self.submit_at = now + self.seconds, now + self.seconds * 0.8

    def wait(self) -> None:
        self._barrier.wait()


class Reviewer:
    def __init__(self, base_url: str, username: str, password: str, tally: Tally) -> None:
        self.base, self.username, self.password, self.tally = base_url, username, password, tally
        self.http = httpx.Client(base_url=base_url, timeout=120, follow_redirects=False)
        self.csrf = ""

    def call(self, method: str, url: str, ok: tuple[int, ...] = (200,), **kw: Any) -> Any:
        headers = {"X-CSRFToken": self.csrf, **kw.pop("headers", {})} if method == "POST" else {}
        started = time.perf_counter()
        try:
            response = self.http.request(method, url, headers=headers, **kw)
        except httpx.HTTPError as exc:
            with self.tally.lock:
                self.tally.errors.append(f"{self.username} {method} {url}: {exc!r}")
            return None
        with self.tally.lock:
            self.tally.latencies.append(time.perf_counter() - started)
            if response.status_code not in ok:
                self.tally.errors.append(f"{self.username} {method} {url}: {response.status_code}")
                return None
        return response

    def login(self) -> bool:
        page = self.call("GET", "/accounts/login/")
        if page is None:
            return False
        self.csrf = _CSRF.search(page.text).group(1)  # type: ignore[union-attr]
        form = {"username": self.username, "password": self.password}
        form["csrfmiddlewaretoken"] = self.csrf
        done = self.call("POST", "/accounts/login/", ok=(302,), data=form)
        self.csrf = self.http.cookies.get("csrftoken") or self.csrf
        return done is not None

    def open_group(self, campaign: int) -> tuple[str, int, list[str], dict[str, str]] | None:
        """Log in and open the next group: (its URL, assignment, candidate tokens, their paths)."""
        if not self.login() or self.call("GET", "/review/") is None:
            return None
        start = self.call("POST", f"/review/campaigns/{campaign}/next", ok=(302,))
        if start is None:
            return None
        url = start.headers["Location"]
        page = self.call("GET", url)
        if page is None:
            return None
        tokens = list(dict.fromkeys(t for _, t in _TOKEN.findall(page.text)))
        assignment = int(_TOKEN.search(page.text).group(1))  # type: ignore[union-attr]
        return url, assignment, tokens, dict(_FILE.findall(page.text))

    def run(self, campaign: int, window: Window) -> None:
        try:
            opened = self.open_group(campaign)
        finally:
            window.wait()  # every reviewer, even one that failed, so that none waits for ever
        if opened is None:
            return
        url, assignment, tokens, paths = opened
        rng = random.Random(self.username)
        deadline, submit_at = window.deadline, window.submit_at
        seq = 0
        json_accept = {"Accept": "application/json"}
        while time.monotonic() < submit_at:
            seq += 1
            token = rng.choice(tokens)
            note = f"{self.username} note {seq}"
            saved = self.call(
                "POST", f"/review/a/{assignment}/c/{token}/label", data={"notes": note},
                headers=json_accept,
            )  # fmt: skip
            if saved is not None:
                with self.tally.lock:
                    self.tally.notes[token] = note
            events = [{"kind": "heartbeat", "candidate": token}]
            self.call(
                "POST", f"/review/a/{assignment}/events", json={"events": events},
                headers=json_accept,
            )  # fmt: skip
            if seq % 4 == 0:
                self.call("GET", url)
            if seq % 5 == 1 and token in paths:
                text = f"{self.username} fix {seq}"
                fix = {"path": paths[token], "line": 1, "side": "new", "text": text}
                made = self.call(
                    "POST", f"/review/a/{assignment}/c/{token}/fix",
                    data={**fix, "severity": "nit"}, headers=json_accept,
                )  # fmt: skip
                if made is not None:
                    with self.tally.lock:
                        self.tally.fixes.append((token, text))
            time.sleep(rng.uniform(1.5, 3.5))
        self._submit(assignment, tokens, json_accept)
        while time.monotonic() < deadline:
            self.call("GET", "/review/")
            time.sleep(rng.uniform(1.5, 3.5))

    def _submit(self, assignment: int, tokens: list[str], headers: dict[str, str]) -> None:
        for rank, token in enumerate(tokens, start=1):
            note = f"{self.username} final"
            form = {"tier": "t1", "rank_in_tier": rank, "mergeability": "as_is", "notes": note}
            form |= dict.fromkeys(CRITERIA, 4) | {"confidence": 4}
            if self.call("POST", f"/review/a/{assignment}/c/{token}/label", data=form,
                         headers=headers) is not None:  # fmt: skip
                with self.tally.lock:
                    self.tally.notes[token] = note
        if self.call("POST", f"/review/a/{assignment}/submit", headers=headers) is not None:
            with self.tally.lock:
                self.tally.submitted.append(assignment)


def run_load(base_url: str, campaign: int, creds: list[list[str]], seconds: float) -> Tally:
    base_url = loopback_only(base_url)
    tally = Tally()
    window = Window(len(creds), seconds)
    threads = [
        threading.Thread(target=Reviewer(base_url, user, pw, tally).run, args=(campaign, window))
        for user, pw in creds
    ]
    for t in threads:
        t.start()
    for t in threads:
        # Bounded: the loops end at the deadline; requests time out after 120 s.
        t.join(timeout=seconds + 600)
    tally.latencies.sort()
    return tally


def write_problems(tally: Tally, stored: dict[str, Any]) -> list[str]:
    """Acknowledged writes missing from the database, changed, or stored more than once."""
    problems = []
    notes = dict(stored["notes"])
    for token, note in tally.notes.items():
        if notes.get(token) != note:
            problems.append(f"note of {token}: acknowledged {note!r}, stored {notes.get(token)!r}")
    stored_fixes = Counter(tuple(f) for f in stored["fixes"])
    for fix, n in Counter(tally.fixes).items():
        if stored_fixes[fix] != n:
            problems.append(f"fix {fix}: acknowledged {n}×, stored {stored_fixes[fix]}×")
    if sorted(stored_fixes.elements()) != sorted(tally.fixes):
        problems.append("fix requests stored that were never acknowledged")
    missing = set(tally.submitted) - set(stored["submitted"])
    if missing:
        problems.append(f"acknowledged submissions not stored: {sorted(missing)}")
    return problems


def summary(tally: Tally, seconds: float) -> str:
    lat = tally.latencies or [0.0]

    def pct(q: float) -> float:
        return lat[min(len(lat) - 1, int(q * len(lat)))] * 1000

    return (
        f"{len(tally.latencies)} requests in {seconds:.0f} s = {len(lat) / seconds:.1f} req/s; "
        f"p50 {pct(0.5):.0f} ms, p95 {pct(0.95):.0f} ms, p99 {pct(0.99):.0f} ms, "
        f"max {lat[-1] * 1000:.0f} ms (median {statistics.median(lat) * 1000:.0f} ms); "
        f"errors {len(tally.errors)}; acknowledged: {len(tally.notes)} notes, "
        f"{len(tally.fixes)} fix requests, {len(tally.submitted)} submissions"
    )


def main() -> int:
    import os

    from tests.faults.services import free_port, gunicorn, manage, service_env

    parser = argparse.ArgumentParser()
    parser.add_argument("--reviewers", type=int, default=50)
    parser.add_argument("--seconds", type=float, default=60.0)
    args = parser.parse_args()
    url = os.environ.get(
        "BENCH_DATABASE_URL", "postgres://postgres@127.0.0.1:5432/gagar_bench_load"
    )
    _recreate(url)
    var = Path(tempfile.mkdtemp(prefix="gagar-bench-load-"))
    env = service_env(url, "memory://", var, DATABASE_CONN_MAX_AGE="60", DEBUG="0")
    env.setdefault("SECRET_KEY", "bench-only-secret-key-not-for-production")
    manage(env, "migrate")
    setup = json.loads(manage(env, "reviewers", str(args.reviewers)))
    port = free_port()
    web = gunicorn(port, env, var)
    try:
        tally = run_load(f"http://127.0.0.1:{port}", setup["campaign"], setup["reviewers"],
                         args.seconds)  # fmt: skip
    finally:
        web.stop()
    problems = write_problems(tally, json.loads(manage(env, "writes")))
    print(f"{args.reviewers} reviewers: {summary(tally, args.seconds)}")
    print(f"lost or duplicated writes: {len(problems)}")
    for line in (tally.errors + problems)[:20]:
        print("  ", line)
    return 1 if tally.errors or problems else 0


def _recreate(url: str) -> None:
    import psycopg

    parts = urlsplit(url)
    name = parts.path.lstrip("/")
    with psycopg.connect(url.replace(f"/{name}", "/postgres"), autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{name}"')


if __name__ == "__main__":
    raise SystemExit(main())
