"""Grader orchestration overhead and worker scaling, with a zero-latency grader (the heuristic).

A synthetic repository of ~2,000 files; groups of 16 candidates, each patch touching 1-3 files.
1. Baseline: raw `git worktree add` + `git apply` of the same 16 patches, and their removal.
2. Orchestration per group: `grader_run_execute` end to end (claim, workspace, every tool the
   grader calls, event and verdict persistence) — the model's own time is zero here.
3. Throughput: groups per minute through real Celery workers (one, then two processes) on Redis.

Needs PostgreSQL (BENCH_DATABASE_URL, default postgres://postgres@127.0.0.1:5432/gagar_bench_grader,
recreated) and Redis (BENCH_REDIS_URL, default redis://127.0.0.1:6379/12, flushed) for part 3.
The repository, the baseline's trees and the grader's workspaces all live under TMPDIR: the
filesystem decides the absolute times (TMPDIR=/dev/shm measures on tmpfs, as docs/deployment.md
recommends for grading hosts); the ratios compare like with like either way.
Usage: python bench/bench_grader.py [--files 2000] [--candidates 16] [--groups 8] [--repeat 3]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
DEFAULT_DB = "postgres://postgres@127.0.0.1:5432/gagar_bench_grader"
DEFAULT_REDIS = "redis://127.0.0.1:6379/12"
GIT_ENV = {
    "GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "bench@localhost",
    "GIT_COMMITTER_NAME": "bench", "GIT_COMMITTER_EMAIL": "bench@localhost",
    "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1",
}  # fmt: skip


def git(cwd: Path, *args: str, stdin: str | None = None) -> str:
    env = {**os.environ, **GIT_ENV}
    out = subprocess.run(
        ["git", *args], cwd=cwd, input=stdin, capture_output=True, text=True, env=env, check=True
    )
    return out.stdout


def make_repo(repo: Path, files: int) -> str:
    repo.mkdir(parents=True)
    git(repo, "init", "-q")
    for i in range(files):
        path = repo / f"pkg{i // 50:02d}" / f"mod{i:04d}.py"
        path.parent.mkdir(exist_ok=True)
        body = "".join(f"def f{j}(x):\n    return x + {i * 100 + j}\n\n" for j in range(20))
        path.write_text(f'"""Module {i}."""\n\n' + body)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "base")
    # Real repositories are packed; 2,000 loose objects would make every checkout I/O-bound.
    git(repo, "repack", "-adq")
    return git(repo, "rev-parse", "HEAD").strip()


def make_patches(repo: Path, n: int) -> list[str]:
    patches = []
    for c in range(n):
        for k in range(1 + c % 3):
            path = repo / f"pkg{(c * 7 + k) % 40:02d}" / f"mod{((c * 7 + k) % 40) * 50 + k:04d}.py"
            text = path.read_text().replace("return x + ", f"return x * {c + 2} + ", 1 + c % 2)
            path.write_text(text + f"\n\ndef added_{c}_{k}(x):\n    return f0(x) - {c}\n")
        patches.append(git(repo, "diff"))
        git(repo, "checkout", "-q", "--", ".")
    return patches


def raw_git(repo: Path, sha: str, patches: list[str], root: Path) -> float:
    """The floor: one worktree per candidate plus `git apply`, then deleting them again (the
    cheapest way: remove the directory, prune the worktree records), as every run must and as
    the workspace timing below includes its own cleanup."""
    root.mkdir()
    t0 = time.perf_counter()
    for i, patch in enumerate(patches):
        tree = root / f"c{i}"
        git(repo, "worktree", "add", "-q", "--detach", str(tree), sha)
        git(tree, "apply", "-", stdin=patch)
    shutil.rmtree(root)
    git(repo, "worktree", "prune")
    return time.perf_counter() - t0


def group_record(i: int, repo: Path, sha: str, patches: list[str]) -> dict[str, Any]:
    attempts = []
    for c, patch in enumerate(patches):
        events = [
            {"kind": "message", "role": "user", "text": "Fix the bug."},
            {"kind": "action", "tool": "bash", "args": "pytest -q", "text": "pytest"},
            {"kind": "observation", "text": "1 failed" if c % 4 == 0 else "ok"},
            {"kind": "message", "role": "assistant", "text": "DONE"},
        ]
        attempts.append({
            "id": f"c{c}", "status": "valid", "test_reward": 0.0 if c % 5 == 4 else 1.0,
            "test_report": {}, "test_output": "1 passed\n", "patch": patch,
            "trajectory": {"format": "native", "events": events}, "num_turns": 2,
            "tokens_in": 1000, "tokens_out": 100, "agent": {"system": "bench", "model": "m"},
        })  # fmt: skip
    return {
        "schema": "gagar.group.v1", "group_id": f"bench-{i}", "run": "bench", "step": i,
        "task": {
            "id": "bench-task", "repo": "bench/synthetic", "repo_url": str(repo),
            "base_commit": sha, "problem_statement": "f0 returns the wrong value.",
            "fail_to_pass": ["tests/test_f.py::test_f0"], "pass_to_pass": [],
            "test_command": "pytest -q",
        },
        "attempts": attempts, "metadata": {},
    }  # fmt: skip


def setup_django(var: Path, db_url: str, broker: str) -> None:
    os.environ.update(
        GAGAR_VAR_DIR=str(var),
        DATABASE_URL=db_url,
        SECRET_KEY="bench",
        GAGAR_SANDBOX="none",
        CELERY_BROKER_URL=broker,
    )
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "gagar_site.settings")
    import django
    import psycopg

    base, name = db_url.rsplit("/", 1)
    with psycopg.connect(f"{base}/postgres", autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{name}"')
    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)


def throughput(
    n_workers: int, group_ids: list[int], name: str, var: Path, env: dict[str, str]
) -> float:
    from grading.models import GraderConfig, GraderRun, Group
    from grading.services.grader_runs import grader_runs_request

    var.mkdir(parents=True, exist_ok=True)
    logs = [var / f"{name}-w{i}.log" for i in range(n_workers)]
    procs = [
        subprocess.Popen(
            [
                str(ROOT / ".venv/bin/celery"),
                "-A",
                "gagar_site",
                "worker",
                "-Q",
                "grading",
                "-c",
                "1",
                "-n",
                f"{name}{i}@%h",
                "--without-mingle",
                "--without-gossip",
                "-l",
                "INFO",
            ],
            cwd=ROOT,
            env=env,
            stdout=log.open("wb"),
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        for i, log in enumerate(logs)
    ]
    try:
        deadline = time.monotonic() + 60
        while not all("ready." in log.read_text(errors="replace") for log in logs):
            if time.monotonic() > deadline:
                raise RuntimeError(f"workers did not start; see {logs}")
            time.sleep(0.2)
        config = GraderConfig.objects.create(name=name, backend="heuristic")
        t0 = time.perf_counter()
        runs = grader_runs_request(groups=Group.objects.filter(pk__in=group_ids), config=config)
        ids = [r.pk for r in runs]
        while GraderRun.objects.filter(pk__in=ids, status__in=["pending", "running"]).exists():
            time.sleep(0.05)
        elapsed = time.perf_counter() - t0
        failed = GraderRun.objects.filter(pk__in=ids).exclude(status="succeeded").count()
        if failed:
            raise RuntimeError(f"{failed} runs did not succeed")
        return len(ids) / elapsed * 60
    finally:
        for p in procs:
            os.killpg(p.pid, 15)
        for p in procs:
            p.wait(timeout=30)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--files", type=int, default=2000)
    ap.add_argument("--candidates", type=int, default=16)
    ap.add_argument("--groups", type=int, default=8, help="groups per throughput run")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="bench-grader-"))
    try:
        repo = tmp / "repo"
        sha = make_repo(repo, args.files)
        patches = make_patches(repo, args.candidates)
        broker = os.environ.get("BENCH_REDIS_URL", DEFAULT_REDIS)
        setup_django(tmp / "var", os.environ.get("BENCH_DATABASE_URL", DEFAULT_DB), broker)

        from grading.domain.bundle import group_from_object
        from grading.grader.workspace import Workspace
        from grading.services.grader_runs import grader_run_execute, grader_runs_request
        from grading.services.imports import groups_import

        records = [
            group_from_object(group_record(i, repo, sha, patches), source="bench")
            for i in range(args.groups + args.repeat)
        ]
        report = groups_import(records=records)
        assert report.ok, report.problems
        ids = [r.group_id for r in report.results]
        from grading.models import GraderConfig, Group

        # The heuristic, named: the default configuration is the analysis grader now, which
        # is not the zero-latency grader this bench isolates the orchestration with.
        config, _ = GraderConfig.objects.get_or_create(
            name="bench:heuristic", defaults={"backend": "heuristic"}
        )
        # Interleaved, so that load from other jobs on the machine hits every side alike.
        raw: list[float] = []
        ws_times: list[float] = []
        per_group: list[float] = []
        for r, gid in enumerate(ids[: args.repeat]):
            raw.append(raw_git(repo, sha, patches, tmp / f"raw{r}"))
            t0 = time.perf_counter()
            Workspace.create(repo, sha, {f"C{i}": p for i, p in enumerate(patches)}).cleanup()
            ws_times.append(time.perf_counter() - t0)
            (run,) = grader_runs_request(groups=[Group.objects.get(pk=gid)], config=config)
            t0 = time.perf_counter()
            grader_run_execute(run_id=run.pk, worker="bench")
            per_group.append(time.perf_counter() - t0)
            run.refresh_from_db()
            assert run.status == "succeeded", run.failure_reason
        base, orch, ws = (
            statistics.median(raw),
            statistics.median(per_group),
            statistics.median(ws_times),
        )
        print(f"{args.files} files, {args.candidates} candidates, median of {args.repeat} runs")
        print(f"{'measure':<46}{'seconds':>9}{'× raw git':>11}")
        print(f"{'raw worktree add + apply + removal (baseline)':<46}{base:>9.2f}{1:>11.2f}")
        print(f"{'workspace only (create + cleanup)':<46}{ws:>9.2f}{ws / base:>11.2f}")
        print(f"{'orchestration per group (end to end)':<46}{orch:>9.2f}{orch / base:>11.2f}")
        print(f"  {run.llm_calls} llm calls, {run.tool_calls} tool calls; target ≤ 1.5×, < 10 s")

        try:
            import redis

            redis.Redis.from_url(broker).flushdb()
        except Exception as exc:  # any failure means no Redis: skip part 3
            print(f"throughput skipped: Redis at {broker} unavailable ({exc})")
            return 0
        env = dict(os.environ)
        env.pop("DJANGO_SETTINGS_MODULE", None)
        rest = ids[args.repeat :]
        one = throughput(1, rest, "one-worker", tmp / "var", env)
        two = throughput(2, rest, "two-workers", tmp / "var", env)
        print(f"{'workers':<10}{'groups/min':>12}")
        print(f"{1:<10}{one:>12.1f}\n{2:<10}{two:>12.1f}   ({two / one:.2f}×, target ≥ 1.7×)")
        print(f"(this machine has {os.cpu_count()} CPUs)")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
