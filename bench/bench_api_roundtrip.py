"""API round trip of a training step: submit 128 groups → all graded advantages fetched.

Real services: a PostgreSQL bench database (created and migrated if missing), a Redis broker, a
Celery worker subprocess grading with the heuristic grader (`-Q grading`), and the API served by
gunicorn. Each step: POST the bundle to /api/v1/training/groups, then GET the step's advantages
with a deadline until every group is graded. Prints p50/p95 over the timed steps.

Usage: .venv/bin/python bench/bench_api_roundtrip.py [--steps 5] [--groups 128] [--group-size 16]
  env: BENCH_DATABASE_URL (default postgres://postgres@127.0.0.1:5432/gagar_bench),
       BENCH_REDIS_URL (default redis://127.0.0.1:6379/14)
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import socket
import statistics
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
VENV_BIN = Path(sys.executable).parent

PATCH = (
    "diff --git a/pkg/sizes.py b/pkg/sizes.py\n--- a/pkg/sizes.py\n+++ b/pkg/sizes.py\n"
    "@@ -1,3 +1,3 @@\n def f(n):\n-    return n > 1\n+    return n >= 1\n \n"
)
BIG_PATCH = (
    "diff --git a/pkg/sizes.py b/pkg/sizes.py\n--- a/pkg/sizes.py\n+++ b/pkg/sizes.py\n"
    "@@ -1,3 +1,6 @@\n def f(n):\n-    return n > 1\n+    if n == 1:\n+        return True\n"
    "+    return n >= 1\n+\n \n"
)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _attempt(i: int, rng_pass: bool) -> dict[str, Any]:
    return {
        "id": f"a{i}",
        "status": "valid",
        "test_reward": 1.0 if rng_pass else 0.0,
        "test_output": "1 passed\n" if rng_pass else "1 failed\n",
        "patch": (PATCH if i % 2 else BIG_PATCH) if rng_pass else None,
        "trajectory": {
            "format": "native",
            "events": [
                {"kind": "thought", "role": "assistant", "text": f"try {i}"},
                {
                    "kind": "action",
                    "role": "assistant",
                    "text": "",
                    "tool": "bash",
                    "args": "cat pkg/sizes.py",
                },
            ],
        },
        "num_turns": 2 + i % 5,
    }


def step_bundle(run: str, step: int, groups: int, size: int) -> bytes:
    lines = []
    for g in range(groups):
        passes = 1 + (g * 7 + step) % (size - 1)  # 1..size-1 passers: a λ in every group
        lines.append(
            {
                "schema": "gagar.group.v1",
                "run": run,
                "step": step,
                "task": {
                    "id": f"bench-task-{g}",
                    "repo": "acme/pkg",
                    "problem_statement": "f(1)",
                    "fail_to_pass": ["t1"],
                },
                "attempts": [_attempt(i, i < passes) for i in range(size)],
            }
        )
    return b"".join(json.dumps(line).encode() + b"\n" for line in lines)


def _ensure_database(url: str) -> None:
    import psycopg

    base, _, name = url.rpartition("/")
    with psycopg.connect(base + "/postgres", autocommit=True) as conn:
        if not conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,)).fetchone():
            conn.execute(f'CREATE DATABASE "{name}"')


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=5, help="timed steps")
    parser.add_argument("--groups", type=int, default=128)
    parser.add_argument("--group-size", type=int, default=16)
    parser.add_argument("--concurrency", type=int, default=os.cpu_count() or 2)
    parser.add_argument("--deadline", type=float, default=120.0)
    args = parser.parse_args()

    db_url = os.environ.get("BENCH_DATABASE_URL", "postgres://postgres@127.0.0.1:5432/gagar_bench")
    env = {
        **os.environ,
        "DATABASE_URL": db_url,
        "CELERY_BROKER_URL": os.environ.get("BENCH_REDIS_URL", "redis://127.0.0.1:6379/14"),
        "SECRET_KEY": os.environ.get("SECRET_KEY", "bench-only-secret"),
        "DEBUG": "0",
        "DATABASE_CONN_MAX_AGE": "60",
    }
    _ensure_database(db_url)
    subprocess.run(
        [sys.executable, "manage.py", "migrate", "--noinput", "-v0"], cwd=ROOT, env=env, check=True
    )
    os.environ.update(env)
    os.environ["DJANGO_SETTINGS_MODULE"] = "gagar_site.settings"
    import django

    django.setup()
    from grading.services.tokens import api_token_create, service_account_create

    logging.getLogger("httpx").setLevel(logging.WARNING)
    user = service_account_create(username="bench-loop")
    _, secret = api_token_create(user=user, name="bench")

    port = _free_port()
    procs = [
        subprocess.Popen(
            [
                str(VENV_BIN / "celery"),
                "-A",
                "gagar_site",
                "worker",
                "-Q",
                "grading,default",
                "--concurrency",
                str(args.concurrency),
                "--loglevel",
                "WARNING",
                "-n",
                f"bench-{uuid.uuid4().hex[:6]}@%h",
            ],
            cwd=ROOT,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        ),
        subprocess.Popen(
            [
                str(VENV_BIN / "gunicorn"),
                "gagar_site.wsgi",
                "-b",
                f"127.0.0.1:{port}",
                "-w",
                "2",
                "--threads",
                "4",
                "--timeout",
                "300",
            ],
            cwd=ROOT,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        ),
    ]
    run = f"bench-{uuid.uuid4().hex[:8]}"
    times: list[float] = []
    submit_times: list[float] = []
    try:
        with httpx.Client(
            base_url=f"http://127.0.0.1:{port}",
            timeout=args.deadline + 60,
            headers={"Authorization": f"Bearer {secret}"},
        ) as client:
            for _ in range(100):  # wait for the server
                try:
                    client.get("/healthz")
                    break
                except httpx.TransportError:
                    time.sleep(0.2)
            # Step 0 is a warm-up (worker start, first connections), not timed.
            for step in range(args.steps + 1):
                body = step_bundle(run, step, args.groups, args.group_size)
                t0 = time.perf_counter()
                r = client.post(
                    "/api/v1/training/groups",
                    content=body,
                    headers={"Content-Type": "application/x-ndjson"},
                )
                r.raise_for_status()
                t_submit = time.perf_counter() - t0
                while True:
                    payload = client.get(
                        f"/api/v1/training/runs/{run}/steps/{step}/advantages",
                        params={"deadline": args.deadline},
                    ).json()
                    if payload["counts"]["graded"] == args.groups or payload["complete"]:
                        break
                elapsed = time.perf_counter() - t0
                if payload["counts"]["graded"] != args.groups:
                    print(f"step {step}: not all graded: {payload['counts']}")
                    return 1
                if step:
                    times.append(elapsed)
                    submit_times.append(t_submit)
                print(
                    f"step {step}{' (warm-up)' if not step else ''}: {elapsed:.2f} s "
                    f"(submit {t_submit:.2f} s) {payload['counts']}",
                    flush=True,
                )
    finally:
        for p in procs:
            p.terminate()
        for p in procs:
            p.wait(timeout=30)

    def pct(xs: list[float], q: int) -> float:
        return statistics.quantiles(xs, n=100, method="inclusive")[q - 1] if len(xs) > 1 else xs[0]

    n_att = args.groups * args.group_size
    print(
        f"{args.steps} steps x {args.groups} groups x {args.group_size} attempts, heuristic "
        f"grader, {args.concurrency} worker processes, PostgreSQL + Redis, gunicorn"
    )
    print(
        f"round trip submit -> all graded advantages: p50 {pct(times, 50):.2f} s, "
        f"p95 {pct(times, 95):.2f} s; submit alone p50 {pct(submit_times, 50):.2f} s; "
        f"{n_att / statistics.median(times):,.0f} attempts/s"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
