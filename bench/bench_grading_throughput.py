"""LLM-bound grading at the scale of a training step.

A grader run spends nearly all its time waiting on the model. This runs a step of N groups of
the sample repository (workspaces under TMPDIR, tmpfs by default) against the project's fake
OpenAI-compatible server (tests/grader/fakes) answering every call after LATENCY seconds, through
real Celery workers on Redis and PostgreSQL, twice:

1. baseline — today's worker: prefork, one process per run in flight, each holding its own
   database connections (the run's and its heartbeat's), at BASELINE_CONCURRENCY processes;
2. design — one process with a threads pool for the `grading` queue (`-P threads -c N`) and a
   connection pool (GAGAR_DB_POOL_MAX): runs hand their connection back between database steps.

With `--before-ref REF` (e.g. the commit before a change) the design's step is graded a second
time, in the same run, by REF's code (its worker and its fake server, `git archive`d into a
temporary tree), so a before/after ratio is measured under the same load.

For each it reports wall time against the latency floor (calls per run × latency: a run cannot
be faster), runs in flight, memory per in-flight run (the workers' RSS over the peak in flight),
the peak of database connections in use, CPU seconds per run in the worker and in the fake
server (its own process), and that every run succeeded exactly once. While the design's step is
being graded, the training API's deadline fallback is called and timed.

Then it kills a worker mid-step: a step of `--kill-groups` groups on the design's worker, which
is SIGKILLed once every run is in flight and about half-way through its calls; a fresh worker
is started, the reaper runs as celery beat would, and the runs of every group are counted in the
database after recovery: exactly one run per group, every one succeeded, none graded twice.

Targets (issue 16): ≥ 128 runs in flight, the step within 1.5× the floor, ≤ 60 MB per in-flight
run, ≤ 20 database connections. Needs PostgreSQL (BENCH_DATABASE_URL, default
postgres://postgres@127.0.0.1:5432/gagar_bench_throughput, recreated) and Redis (BENCH_REDIS_URL,
default redis://127.0.0.1:6379/6, flushed).
Usage: python bench/bench_grading_throughput.py [--groups 128] [--latency 2] [--per-turn 2]
       [--baseline-concurrency 8] [--baseline-groups 16] [--pool 16] [--kill-groups 32]
       [--before-ref COMMIT] [--processes 1]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
# Whose code this process runs: the fake server of `--before-ref` runs the reference tree's.
sys.path.insert(0, os.environ.get("BENCH_CODE_TREE") or str(ROOT))
DEFAULT_DB = "postgres://postgres@127.0.0.1:5432/gagar_bench_throughput"
DEFAULT_REDIS = "redis://127.0.0.1:6379/6"


def setup_django(var: Path, db_url: str, broker: str) -> None:
    os.environ.update(
        GAGAR_VAR_DIR=str(var),
        DATABASE_URL=db_url,
        SECRET_KEY="bench",
        GAGAR_SANDBOX="none",
        CELERY_BROKER_URL=broker,
        LOG_LEVEL="WARNING",
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


def import_step(n: int, step: int) -> list[int]:
    """N copies of the sample group in one step (one task each: a group is per task and step)."""
    from grading.domain.bundle import group_from_object
    from grading.sample.build import build_repo, load_committed_group
    from grading.services.demo import sample_repo_path
    from grading.services.imports import groups_import

    repo = sample_repo_path()
    if not (repo / ".git").is_dir():
        repo.parent.mkdir(parents=True, exist_ok=True)
        build_repo(repo)
    records = []
    for i in range(n):
        g = load_committed_group()
        g["task"]["repo_url"] = str(repo)
        g["task"]["id"] = f"{g['task']['id']}-{step}-{i}"
        g["group_id"] = f"bench-{step}-{i}"
        g["run"], g["step"] = "bench", step
        records.append(group_from_object(g, source="bench"))
    report = groups_import(records=records)
    assert report.ok, report.problems
    return [r.group_id for r in report.results]


class Handler:
    """The fake model: a scripted agent that reads what it is sent and grades, statelessly (a
    fresh agent per request, so any number of conversations can run at once), after LATENCY."""

    def __init__(self, verdict: dict[str, Any], latency: float, per_turn: int) -> None:
        self.verdict, self.latency, self.per_turn = verdict, latency, per_turn
        self.calls = 0
        self.in_flight = 0
        self.peak_in_flight = 0
        self._lock = threading.Lock()

    def __call__(self, request: Any) -> Any:
        from tests.grader.fakes.agent import ScriptedAgent
        from tests.grader.fakes.llm_server import FakeResponse
        from tests.grader.fakes.personalities import OpenAIChat

        if request.path == "/bench/stats":
            return FakeResponse(body={"calls": self.calls, "peak_in_flight": self.peak_in_flight})
        chat = OpenAIChat(
            ScriptedAgent(self.verdict, per_turn=self.per_turn, padded=True),
            context_limit=128_000,
        )
        if request.method == "GET":
            return chat(request)
        with self._lock:
            self.calls += 1
            self.in_flight += 1
            self.peak_in_flight = max(self.peak_in_flight, self.in_flight)
        try:
            time.sleep(self.latency)
            return chat(request)
        finally:
            with self._lock:
                self.in_flight -= 1


def serve(verdict_file: str, url_file: str, latency: float, per_turn: int) -> int:
    """`--serve`: the fake model server in its own process, so that its CPU is measured apart
    from the bench's and `--before-ref` can run the reference tree's fake (BENCH_CODE_TREE)."""
    from tests.grader.fakes.llm_server import FakeLLMServer

    verdict = json.loads(Path(verdict_file).read_text())
    server = FakeLLMServer(handler=Handler(verdict, latency, per_turn), concurrent=True).start()
    Path(url_file).write_text(server.url)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    stop.wait()
    server.stop()
    return 0


@dataclass
class FakeServer:
    proc: subprocess.Popen[bytes]
    url: str

    def stats(self) -> dict[str, Any]:
        import httpx

        return dict(httpx.get(f"{self.url}/bench/stats", timeout=10).json())

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()


def start_server(
    tree: Path, verdict: dict[str, Any], args: argparse.Namespace, var: Path, name: str
) -> FakeServer:
    verdict_file, url_file = var / f"{name}-verdict.json", var / f"{name}-server.url"
    verdict_file.write_text(json.dumps(verdict))
    url_file.unlink(missing_ok=True)
    env = {**os.environ, "BENCH_CODE_TREE": str(tree), "PYTHONPATH": str(tree)}
    proc = subprocess.Popen(
        [sys.executable, str(Path(__file__).resolve()), "--serve", str(verdict_file),
         str(url_file), "--latency", str(args.latency), "--per-turn", str(args.per_turn)],
        cwd=tree, env=env, stdout=(var / f"{name}-server.log").open("wb"),
        stderr=subprocess.STDOUT, start_new_session=True,
    )  # fmt: skip
    deadline = time.monotonic() + 60
    while not url_file.exists() or not url_file.read_text():
        if time.monotonic() > deadline or proc.poll() is not None:
            raise RuntimeError(f"the fake server did not start; see {var}/{name}-server.log")
        time.sleep(0.1)
    return FakeServer(proc, url_file.read_text())


def start_worker(
    name: str, worker_args: list[str], extra_env: dict[str, str], var: Path, tree: Path = ROOT
) -> subprocess.Popen[bytes]:
    """A Celery worker on the `grading` queue running `tree`'s code; returns once it answers a
    ping through the broker."""
    env = {**os.environ, **extra_env}
    env.pop("DJANGO_SETTINGS_MODULE", None)
    if tree != ROOT:
        env["PYTHONPATH"] = str(tree)
    log = var / f"{name}.log"
    proc = subprocess.Popen(
        [str(ROOT / ".venv/bin/celery"), "-A", "gagar_site", "worker", "-Q", "grading",
         "-n", f"{name}@%h", "--without-mingle", "--without-gossip", "-l", "WARNING",
         *worker_args],
        cwd=tree, env=env, stdout=log.open("wb"), stderr=subprocess.STDOUT,
        start_new_session=True,
    )  # fmt: skip
    time.sleep(3)
    deadline = time.monotonic() + 120
    from gagar_site.celery import app

    while not app.control.ping(destination=[f"{name}@{os.uname().nodename}"], timeout=1):
        if time.monotonic() > deadline or proc.poll() is not None:
            stop_worker(proc)
            raise RuntimeError(f"worker did not start; see {log}")
    return proc


def stop_worker(proc: subprocess.Popen[bytes], sig: int = signal.SIGTERM) -> None:
    try:
        os.killpg(proc.pid, sig)
    except ProcessLookupError:
        return
    try:
        proc.wait(timeout=60)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


def expected_verdict(group_id: int, seed: int) -> dict[str, Any]:
    from grading.grader.heuristic import HeuristicBackend
    from grading.grader.loop import run_grader
    from grading.services.grader_inputs import group_input

    out = run_grader(group_input(group_id=group_id), HeuristicBackend(), seed=seed)
    assert out.status == "ok", out.reason
    return {k: v for k, v in out.alias_verdict.items() if k != "budget_use"}


def _cpu_s(pids: list[int]) -> float:
    """CPU seconds (user + system) of these processes and their descendants: the alive ones,
    and the children they have reaped (the workspace's short `git` processes)."""
    tick = os.sysconf("SC_CLK_TCK")
    seen, todo, total = set(), list(pids), 0
    while todo:
        pid = todo.pop()
        if pid in seen:
            continue
        seen.add(pid)
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            # utime, stime, then cutime, cstime (children waited for)
            total += sum(int(f) for f in fields[11:15])
            todo += [int(c) for c in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
        except OSError:
            continue
    return total / tick


def _runqueue_wait_s(pid: int) -> float:
    """Seconds the process's threads spent runnable but waiting for a CPU (schedstat): how
    much the machine's other load held the worker back. A thread waiting for the GIL is
    asleep, not runnable, so this is not the interpreter's own contention."""
    total = 0
    try:
        tasks = list(Path(f"/proc/{pid}/task").iterdir())
    except OSError:
        return 0.0
    for task in tasks:
        try:
            total += int((task / "schedstat").read_text().split()[1])
        except (OSError, IndexError, ValueError):
            continue
    return total / 1e9


def _rss_mb(pids: list[int]) -> float:
    """Resident memory of these processes and all their descendants, in MB."""
    seen, todo, total = set(), list(pids), 0
    while todo:
        pid = todo.pop()
        if pid in seen:
            continue
        seen.add(pid)
        try:
            for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1])
            children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
            todo += [int(c) for c in children]
        except OSError:
            continue
    return total / 1024


@dataclass
class Sample:
    running: int = 0
    connections: int = 0
    rss_mb: float = 0.0
    rss_at_peak: float = 0.0
    series: list[tuple[float, int, int]] = field(default_factory=list)


def _sampler(stop: threading.Event, db_name: str, pids: list[int], out: Sample) -> None:
    import psycopg
    from django.conf import settings

    db = settings.DATABASES["default"]
    dsn = f"postgres://{db['USER']}@{db['HOST']}:{db['PORT'] or 5432}/postgres"
    with psycopg.connect(dsn, autocommit=True) as conn:
        t0 = time.monotonic()
        while not stop.is_set():
            # Every connection to the bench database: the worker's plus the bench's own two
            # (its main thread and the in-flight sampler).
            row = conn.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = %s", [db_name]
            ).fetchone()
            conns = row[0] if row else 0
            out.connections = max(out.connections, int(conns))
            out.rss_mb = max(out.rss_mb, _rss_mb(pids))
            out.series.append((time.monotonic() - t0, int(conns), out.running))
            stop.wait(0.25)


def _running_sampler(stop: threading.Event, ids: list[int], out: Sample, pids: list[int]) -> None:
    from django.db import connection

    from grading.models import GraderRun

    while not stop.is_set():
        n = GraderRun.objects.filter(pk__in=ids, status="running").count()
        if n >= out.running:
            out.running = n
            out.rss_at_peak = _rss_mb(pids)
        stop.wait(0.25)
    connection.close()


def grade_step(
    *,
    name: str,
    worker_args: list[str],
    extra_env: dict[str, str],
    group_ids: list[int],
    config: Any,
    var: Path,
    db_name: str,
    server: FakeServer,
    tree: Path = ROOT,
    during: Any = None,
    processes: int = 1,
) -> dict[str, Any]:
    """Grade `group_ids` on `processes` workers started with `worker_args` (each its own
    process: a threads worker runs Python on one core at a time, so two use both cores)."""
    from grading.models import CandidateGrade, GraderRun, Group
    from grading.services.grader_runs import grader_runs_request

    procs: list[subprocess.Popen[bytes]] = []
    try:
        for i in range(processes):
            procs.append(start_worker(name if processes == 1 else f"{name}-{i + 1}",
                                      worker_args, extra_env, var, tree))  # fmt: skip
        pids = [p.pid for p in procs]
        rss_idle = _rss_mb(pids)
        stop = threading.Event()
        sample = Sample()
        threads = [
            threading.Thread(target=_sampler, args=(stop, db_name, pids, sample)),
        ]
        for t in threads:
            t.start()
        t0 = time.perf_counter()
        cpu0, own0 = _cpu_s(pids), time.process_time()
        wait0 = sum(_runqueue_wait_s(pid) for pid in pids)
        fake0, calls0 = _cpu_s([server.proc.pid]), server.stats()["calls"]
        runs = grader_runs_request(groups=Group.objects.filter(pk__in=group_ids), config=config)
        ids = [r.pk for r in runs]
        running = threading.Thread(target=_running_sampler, args=(stop, ids, sample, pids))
        running.start()
        fallback = during(group_ids) if during else None
        while GraderRun.objects.filter(pk__in=ids, status__in=["pending", "running"]).exists():
            if any(p.poll() is not None for p in procs):
                raise RuntimeError(f"a worker died; see {var}/{name}*.log")
            time.sleep(0.2)
        elapsed = time.perf_counter() - t0
        worker_cpu, bench_cpu = _cpu_s(pids) - cpu0, time.process_time() - own0
        worker_wait = sum(_runqueue_wait_s(pid) for pid in pids) - wait0
        load = os.getloadavg()[0]
        fake_cpu = _cpu_s([server.proc.pid]) - fake0
        stats = server.stats()
        stop.set()
        for t in [*threads, running]:
            t.join()
        done = GraderRun.objects.filter(pk__in=ids)
        succeeded = done.filter(status="succeeded").count()
        calls = [r.llm_calls for r in done]
        deliveries = sum(r.deliveries for r in done)
        grades = CandidateGrade.objects.filter(run_id__in=ids).count()
        failures = list(done.exclude(status="succeeded").values_list("failure_reason", flat=True))
        return {
            "runs": len(ids),
            "succeeded": succeeded,
            "deliveries": deliveries,
            "grades": grades,
            "failures": failures[:3],
            "elapsed": elapsed,
            "calls_per_run": sum(calls) / len(calls),
            "in_flight": sample.running,
            "connections": sample.connections,
            "rss_idle": rss_idle,
            "rss_peak": sample.rss_mb,
            "rss_at_peak_in_flight": sample.rss_at_peak,
            "fallback": fallback,
            "worker_cpu": worker_cpu,
            "worker_wait": worker_wait,
            "load": load,
            "fake_cpu": fake_cpu,
            "bench_cpu": bench_cpu,
            "fake_calls": stats["calls"] - calls0,
            "fake_peak": stats["peak_in_flight"],
            "processes": processes,
        }
    finally:
        for p in procs:
            stop_worker(p)


def kill_and_recover(
    *,
    worker_args: list[str],
    extra_env: dict[str, str],
    group_ids: list[int],
    config: Any,
    var: Path,
    db_name: str,
    floor_s: float,
) -> dict[str, Any]:
    """SIGKILL the worker mid-step, start a fresh one, reap as celery beat would, and count
    each group's runs in the database after recovery."""
    from django.conf import settings
    from django.db.models import Count

    from grading.models import CandidateGrade, GraderRun, Group
    from grading.services.grader_runs import grader_runs_reap, grader_runs_request

    # Heartbeats every 2 s and stale after 20 s, so that recovery is quick to watch (the
    # defaults are 30 s and 300 s); the bench's reaper reads the same setting. (At 1 s / 5 s a
    # loaded machine delayed live runs' heartbeats past 5 s: reaped and graded again, still once.)
    env = {**extra_env, "GAGAR_GRADER_HEARTBEAT_S": "2", "GAGAR_GRADER_STALE_AFTER_S": "20"}
    settings.GAGAR_GRADER_STALE_AFTER_S = 20.0
    first = start_worker("kill-1", worker_args, env, var)
    second = None
    stop, sample = threading.Event(), Sample()
    pids = [first.pid]
    watch = threading.Thread(target=_sampler, args=(stop, db_name, pids, sample))
    watch.start()
    try:
        runs = grader_runs_request(groups=Group.objects.filter(pk__in=group_ids), config=config)
        ids = [r.pk for r in runs]
        active = GraderRun.objects.filter(pk__in=ids, status="running")
        deadline = time.monotonic() + 300
        while active.count() < len(ids):
            if time.monotonic() > deadline:
                raise RuntimeError("the runs never were all in flight")
            time.sleep(0.2)
        sample.running = len(ids)
        time.sleep(floor_s / 2)  # about half-way through every run's calls
        in_flight = active.count()
        events = sum(
            GraderRun.objects.filter(pk__in=ids)
            .annotate(n=Count("events"))
            .values_list("n", flat=True)
        )
        stop_worker(first, signal.SIGKILL)
        killed = time.perf_counter()
        second = start_worker("kill-2", worker_args, env, var)
        pids[:] = [second.pid]
        reaped = 0
        while GraderRun.objects.filter(pk__in=ids, status__in=["pending", "running"]).exists():
            if second.poll() is not None:
                raise RuntimeError(f"the second worker died; see {var}/kill-2.log")
            if time.perf_counter() - killed > 900:
                raise RuntimeError("the killed step did not recover within 900 s")
            reaped += len(grader_runs_reap())
            time.sleep(1.0)
        recovered = time.perf_counter() - killed
    finally:
        stop.set()
        watch.join()
        for proc in (first, second):
            if proc is not None:
                stop_worker(proc)
    per_group = dict(
        GraderRun.objects.filter(config=config, group_id__in=group_ids)
        .values_list("group_id")
        .annotate(n=Count("id"))
    )
    done = GraderRun.objects.filter(pk__in=ids)
    grades = dict(done.values_list("pk").annotate(n=Count("grades")))
    return {
        "groups": len(group_ids),
        "in_flight_at_kill": in_flight,
        "events_at_kill": events,
        "recovered_s": recovered,
        "reaped": reaped,
        "runs_per_group": sorted(set(per_group.get(g, 0) for g in group_ids)),
        "groups_without_run": sum(1 for g in group_ids if per_group.get(g, 0) == 0),
        "groups_with_two_or_more": sum(1 for g in group_ids if per_group.get(g, 0) > 1),
        "succeeded": done.filter(status="succeeded").count(),
        "deliveries": sorted(set(done.values_list("deliveries", flat=True))),
        "redelivered": done.filter(deliveries__gt=1).count(),
        "grades_per_run": sorted(set(grades.values())),
        "duplicate_grades": CandidateGrade.objects.filter(run_id__in=ids)
        .values("run_id", "attempt_id")
        .annotate(n=Count("id"))
        .filter(n__gt=1)
        .count(),
        "connections": sample.connections,
        "rss_peak": sample.rss_mb,
        "failures": list(done.exclude(status="succeeded").values_list("failure_reason", flat=True))[
            :3
        ],
    }


def deadline_probe(config: Any) -> Any:
    """The training API's deadline fallback while the step is graded: a synchronous trainer
    asking with deadline=1 s gets an answer for every group within about a second."""
    from grading.services.advantages import AdvantageParams
    from grading.services.training import advantages_fetch

    def probe(group_ids: list[int]) -> dict[str, Any]:
        time.sleep(1.0)
        t0 = time.perf_counter()
        fetched = advantages_fetch(
            group_ids=group_ids, config=config, params=AdvantageParams(), deadline_s=1.0
        )
        return {"seconds": time.perf_counter() - t0, "counts": fetched.counts()}

    return probe


def reference_tree(ref: str, dest: Path) -> Path:
    """REF's files (`git archive`), to run its worker and its fake server."""
    dest.mkdir(parents=True)
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", "--format=tar", ref],
        check=True, capture_output=True,
    )  # fmt: skip
    subprocess.run(["tar", "-x", "-C", str(dest)], input=archive.stdout, check=True)
    return dest


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--groups", type=int, default=128, help="groups in the design's step")
    ap.add_argument("--latency", type=float, default=2.0, help="seconds per model call")
    ap.add_argument("--per-turn", type=int, default=2, help="tool calls per model reply")
    ap.add_argument("--baseline-concurrency", type=int, default=8)
    ap.add_argument("--baseline-groups", type=int, default=16)
    ap.add_argument("--pool", type=int, default=16, help="GAGAR_DB_POOL_MAX of the design")
    ap.add_argument("--kill-groups", type=int, default=32, help="groups of the killed step")
    ap.add_argument(
        "--processes",
        type=int,
        default=1,
        help="worker processes of the design (each -c groups/N, a pool of pool/N connections)",
    )
    ap.add_argument(
        "--before-ref", default="", help="also grade the design's step with this commit's code"
    )
    ap.add_argument("--serve", nargs=2, metavar=("VERDICT", "URL_FILE"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.serve:
        return serve(args.serve[0], args.serve[1], latency=args.latency, per_turn=args.per_turn)
    shm = Path("/dev/shm")
    tmp = Path(tempfile.mkdtemp(prefix="bench-throughput-", dir=shm if shm.is_dir() else None))
    os.environ["TMPDIR"] = str(tmp)  # workspaces on tmpfs, as docs/deployment.md recommends
    db_url = os.environ.get("BENCH_DATABASE_URL", DEFAULT_DB)
    broker = os.environ.get("BENCH_REDIS_URL", DEFAULT_REDIS)
    servers: list[FakeServer] = []
    try:
        import redis

        redis.Redis.from_url(broker).flushdb()
        setup_django(tmp / "var", db_url, broker)
        from django.db import connection

        from grading.models import GraderConfig

        db_name = db_url.rsplit("/", 1)[1]
        var = tmp / "var"
        base_ids = import_step(args.baseline_groups, step=0)
        design_ids = import_step(args.groups, step=1)
        before_ids = import_step(args.groups, step=2) if args.before_ref else []
        kill_ids = import_step(args.kill_groups, step=3) if args.kill_groups else []
        verdict = expected_verdict(base_ids[0], seed=0)
        before_tree = reference_tree(args.before_ref, tmp / "before") if args.before_ref else ROOT
        sides = ["baseline", "design", *(["before"] if args.before_ref else [])]
        if args.kill_groups:
            sides.append("kill")
        configs = {}
        for side in sides:
            server = start_server(
                before_tree if side == "before" else ROOT, verdict, args, var, side
            )
            servers.append(server)
            configs[side] = GraderConfig.objects.create(
                name=f"bench-{side}",
                backend="openai",
                model="fake-model",
                base_url=server.url + "/v1",
                seed=0,
                # The fake's token counts are real (tiktoken); a paper-scale budget.
                budget={"max_input_tokens": 5_000_000, "max_output_tokens": 500_000},
            )
        server_of = dict(zip(sides, servers, strict=True))
        connection.close()
        per = max(args.processes, 1)
        design_args = ["-P", "threads", "-c", str(-(-args.groups // per))]
        design_env = {"GAGAR_DB_POOL_MAX": str(max(args.pool // per, 1))}
        results = {
            "baseline": grade_step(
                name="baseline",
                worker_args=["-P", "prefork", "-c", str(args.baseline_concurrency)],
                extra_env={},
                group_ids=base_ids,
                config=configs["baseline"],
                var=var,
                db_name=db_name,
                server=server_of["baseline"],
            ),
        }
        if args.before_ref:
            # Just before the design's step, so that both see about the same machine load.
            results["before"] = grade_step(
                name="before",
                worker_args=design_args,
                extra_env=design_env,
                group_ids=before_ids,
                config=configs["before"],
                var=var,
                db_name=db_name,
                server=server_of["before"],
                tree=before_tree,
                processes=per,
            )
        results["design"] = grade_step(
            name="design",
            worker_args=design_args,
            extra_env=design_env,
            group_ids=design_ids,
            config=configs["design"],
            var=var,
            db_name=db_name,
            server=server_of["design"],
            during=deadline_probe(configs["design"]),
            processes=per,
        )
        killed = None
        if args.kill_groups:
            floor = results["design"]["calls_per_run"] * args.latency
            killed = kill_and_recover(
                worker_args=["-P", "threads", "-c", str(args.kill_groups)],
                extra_env=design_env,
                group_ids=kill_ids,
                config=configs["kill"],
                var=var,
                db_name=db_name,
                floor_s=floor,
            )
        report(results, killed, args)
    finally:
        for server in servers:
            server.stop()
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


def report(
    results: dict[str, dict[str, Any]], killed: dict[str, Any] | None, args: argparse.Namespace
) -> None:
    print(
        f"step of {args.groups} groups (baseline: {args.baseline_groups}) of the sample "
        f"repository; model latency {args.latency:.1f} s per call; {os.cpu_count()} CPUs; "
        f"load average {os.getloadavg()[0]:.1f}; design: {args.processes} threads worker "
        f"process(es), {args.pool} pooled connections in all"
    )
    head = (
        f"{'':<10}{'runs':>6}{'ok':>5}{'calls/run':>10}{'floor s':>9}{'wall s':>8}"
        f"{'× floor':>9}{'in flight':>10}{'MB/run':>8}{'db conns':>9}{'runs/min':>9}"
    )
    print(head)
    per_min = {}
    for side, r in results.items():
        floor = r["calls_per_run"] * args.latency
        per_run_mb = (r["rss_at_peak_in_flight"] or r["rss_peak"]) / max(r["in_flight"], 1)
        per_min[side] = r["runs"] / r["elapsed"] * 60
        label = f"before ({args.before_ref})" if side == "before" else side
        print(
            f"{label:<10}{r['runs']:>6}{r['succeeded']:>5}{r['calls_per_run']:>10.1f}"
            f"{floor:>9.1f}{r['elapsed']:>8.1f}{r['elapsed'] / floor:>9.2f}{r['in_flight']:>10}"
            f"{per_run_mb:>8.1f}{r['connections']:>9}{per_min[side]:>9.1f}"
        )
        if r["failures"]:
            print(f"  failures: {r['failures']}")
        dup = r["deliveries"] - r["runs"]
        print(f"  deliveries beyond one per run: {dup}; grades written: {r['grades']}")
        print(
            f"  CPU per run: worker {r['worker_cpu'] / r['runs']:.2f} s (its git processes "
            f"included), fake model server {r['fake_cpu'] / r['runs']:.2f} s, bench "
            f"{r['bench_cpu'] / r['runs']:.2f} s; idle worker {r['rss_idle']:.0f} MB; fake: "
            f"{r['fake_calls']} calls, {r['fake_peak']} in flight at its peak"
        )
        cores = os.cpu_count() or 1
        both = (r["worker_cpu"] + r["fake_cpu"]) / r["elapsed"] / cores
        n = r.get("processes", 1)
        print(
            f"  CPU-bound? worker busy {r['worker_cpu'] / r['elapsed'] / n:.0%} of {n} core(s) "
            f"(one per process: the interpreter lock), worker + fake {both:.0%} "
            f"of the {os.cpu_count()} cores; the worker's threads waited {r['worker_wait']:.1f} s "
            f"for a CPU (the machine's load); load average at the end {r['load']:.1f}"
        )
    ratio = per_min["design"] / per_min["baseline"]
    print(f"throughput, design vs baseline (same run): {ratio:.1f}×")
    if "before" in results:
        b, d = results["before"], results["design"]
        floor_b, floor_d = b["calls_per_run"] * args.latency, d["calls_per_run"] * args.latency
        print(
            f"design, before ({args.before_ref}) → after, same run: "
            f"{b['elapsed'] / floor_b:.2f}× → {d['elapsed'] / floor_d:.2f}× the floor; CPU per "
            f"run {(b['worker_cpu'] + b['fake_cpu']) / b['runs']:.2f} → "
            f"{(d['worker_cpu'] + d['fake_cpu']) / d['runs']:.2f} s (worker + fake server)"
        )
    fb = results["design"]["fallback"]
    if fb:
        print(
            f"deadline fallback under load: deadline=1 s answered in {fb['seconds']:.2f} s, "
            f"groups {json.dumps(fb['counts'])}"
        )
    if killed:
        k = killed
        print(
            f"worker killed mid-step (SIGKILL, {k['groups']} groups, {k['in_flight_at_kill']} "
            f"runs in flight, {k['events_at_kill']} transcript events (model and tool calls) "
            f"written): recovered in {k['recovered_s']:.1f} s "
            f"({k['reaped']} runs reaped)"
        )
        lost, dup = k["groups_without_run"], k["groups_with_two_or_more"]
        print(
            f"  after recovery: runs per group {k['runs_per_group']} (lost: {lost}, duplicated: "
            f"{dup}); succeeded {k['succeeded']}/{k['groups']}; deliveries per run "
            f"{k['deliveries']} ({k['redelivered']} redelivered); grades per run "
            f"{k['grades_per_run']}, duplicate grades {k['duplicate_grades']}; "
            f"db conns ≤ {k['connections']}"
        )
        if k["failures"]:
            print(f"  failures: {k['failures']}")
    print("targets: ≥ 128 in flight, ≤ 1.5× floor, ≤ 60 MB per in-flight run, ≤ 20 db conns")


if __name__ == "__main__":
    sys.exit(main())
