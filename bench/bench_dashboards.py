"""Benchmark: agreement dashboards on 10,000 groups × 16 attempts × 3 reviews (PostgreSQL).

Prints, in one run:
- the Celery task's time for the full headline set with 2,000 task-bootstrap resamples (κ, raw
  agreement, α humans / with grader, concordance, τ-b, top-1 per configuration, per step,
  stability, calibration, cost, λ cap), split into loading and computing; target < 30 s;
- the dashboard page time once cached (median of 20 GETs); target < 200 ms;
- the same κ/α/τ bootstrap done naively with the reference libraries (sklearn, krippendorff,
  scipy) in a Python loop: a few resamples timed and extrapolated to 2,000, as a ratio.

The synthetic database is built once with bulk_create into BENCH_DATABASE_URL (default
postgres://postgres@127.0.0.1:5432/gagar_bench_dash) and reused when already complete.

Run: .venv/bin/python bench/bench_dashboards.py [--rebuild]
"""

from __future__ import annotations

import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
BENCH_DB = os.environ.get(
    "BENCH_DATABASE_URL", "postgres://postgres@127.0.0.1:5432/gagar_bench_dash"
)
os.environ["DATABASE_URL"] = BENCH_DB
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "gagar_site.settings")
os.environ.setdefault("SECRET_KEY", "bench-only")
os.environ.setdefault("LOG_LEVEL", "WARNING")

import numpy as np  # noqa: E402
import psycopg  # noqa: E402

N_GROUPS, G, REVIEWS, N_REVIEWERS, STEPS = 10_000, 16, 3, 12, 50
N_RESAMPLES = 2000
NAIVE_RESAMPLES = 3


def ensure_database() -> None:
    base, _, name = BENCH_DB.rpartition("/")
    with psycopg.connect(f"{base}/postgres", autocommit=True) as conn:
        if not conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [name]).fetchone():
            conn.execute(f'CREATE DATABASE "{name}"')


ensure_database()
import django  # noqa: E402

django.setup()

from django.contrib.auth.models import User  # noqa: E402
from django.core.management import call_command  # noqa: E402
from django.db import connection  # noqa: E402
from django.test import Client  # noqa: E402
from django.utils import timezone  # noqa: E402


def build(rng: np.random.Generator) -> None:
    from grading.models import (
        Attempt,
        CandidateGrade,
        GraderConfig,
        GraderRun,
        Group,
        Run,
        Step,
        Task,
    )
    from review.models import Assignment, Campaign, Candidate, Label
    from review.models.reviewing import CRITERIA

    with connection.cursor() as cur:
        cur.execute("DROP SCHEMA public CASCADE; CREATE SCHEMA public;")
    call_command("migrate", verbosity=0)
    now = timezone.now()
    t0 = time.perf_counter()
    users = User.objects.bulk_create([User(username=f"bench-rev{i}") for i in range(N_REVIEWERS)])
    User.objects.create_superuser("bench-lead", password="x")
    runs = Run.objects.bulk_create([Run(name=n) for n in ("baseline", "gagar")])
    steps = Step.objects.bulk_create(
        [Step(run=r, number=s) for r in runs for s in range(1, STEPS + 1)]
    )
    per_step = N_GROUPS // len(steps)
    tasks = Task.objects.bulk_create(
        [
            Task(
                external_id=f"t{i}",
                repo=f"org/repo{i % 40}",
                problem_statement="x",
                content_hash=f"{i:064d}",
            )
            for i in range(per_step * STEPS)
        ],
        batch_size=5000,
    )
    groups = Group.objects.bulk_create(
        [
            Group(step=st, task=tasks[(k % STEPS) * per_step + j], content_hash=f"{k}-{j}")
            for k, st in enumerate(steps)
            for j in range(per_step)
        ],
        batch_size=5000,
    )
    truth = rng.choice([1, 2, 3], size=(N_GROUPS, G), p=[0.35, 0.4, 0.25])
    attempts = Attempt.objects.bulk_create(
        [
            Attempt(group=g, external_id=f"a{i}", index=i, test_reward=1.0)
            for g in groups
            for i in range(G)
        ],
        batch_size=10_000,
    )
    configs = GraderConfig.objects.bulk_create(
        [GraderConfig(name=n, backend="scripted") for n in ("frontier", "trained")]
    )
    grader_runs = GraderRun.objects.bulk_create(
        [
            GraderRun(group=g, config=c, status="succeeded", verdict={}, finished_at=now)
            for c in configs
            for g in groups
        ],
        batch_size=10_000,
    )
    grades = []
    for c_i, _ in enumerate(configs):
        noise = rng.choice([-1, 0, 0, 0, 1], size=truth.shape)
        tiers = np.clip(truth + noise, 1, 3)
        for gi in range(N_GROUPS):
            run = grader_runs[c_i * N_GROUPS + gi]
            for i in range(G):
                t = int(tiers[gi, i])
                grades.append(
                    CandidateGrade(
                        run=run,
                        attempt=attempts[gi * G + i],
                        tier=t,
                        rank_in_tier=1 + i % 3,
                        weighted_score=5.2 - t + float(rng.normal(0, 0.4)),
                        scores={c: {"score": 6 - t - (i % 2)} for c in CRITERIA},
                    )
                )
        CandidateGrade.objects.bulk_create(grades, batch_size=20_000)
        grades = []
    campaign = Campaign.objects.create(name="bench", overlap=REVIEWS)
    assignments = Assignment.objects.bulk_create(
        [
            Assignment(
                campaign=campaign,
                group=g,
                reviewer=users[(gi + r * 5) % N_REVIEWERS],
                status="submitted",
                started_at=now,
                expires_at=now,
                submitted_at=now,
            )
            for gi, g in enumerate(groups)
            for r in range(REVIEWS)
        ],
        batch_size=10_000,
    )
    cands = Candidate.objects.bulk_create(
        [
            Candidate(
                assignment=a,
                attempt=attempts[(ai // REVIEWS) * G + i],
                alias=chr(65 + i),
                position=i,
                token=f"{ai}-{i}",
            )
            for ai, a in enumerate(assignments)
            for i in range(G)
        ],
        batch_size=20_000,
    )
    human_noise = rng.choice([-1, 0, 0, 0, 0, 1], size=len(cands))
    Label.objects.bulk_create(
        [
            Label(
                candidate=c,
                tier=f"t{int(np.clip(truth[(k // G) // REVIEWS, k % G] + human_noise[k], 1, 3))}",
                rank_in_tier=1 + k % 2,
                mergeability="as_is" if k % 3 else "after_minor_fixes",
                updated_at=now,
                **dict.fromkeys(CRITERIA, 3 + k % 2),
            )
            for k, c in enumerate(cands)
        ],
        batch_size=20_000,
    )
    print(
        f"built {Attempt.objects.count():,} attempts, {Label.objects.count():,} labels in "
        f"{time.perf_counter() - t0:.0f} s",
        flush=True,
    )


def complete() -> bool:
    from review.models import Label

    try:
        return Label.objects.count() == N_GROUPS * G * REVIEWS
    except Exception:
        return False


def naive_seconds(rng: np.random.Generator) -> float:
    """κ, α and mean τ-b per bootstrap resample with the reference libraries, in a Python loop."""
    import krippendorff
    from scipy.stats import kendalltau
    from sklearn.metrics import cohen_kappa_score

    from review.analytics.arrays import config_view, consensus, human_keys, rating_slots
    from review.analytics.filters import Filters
    from review.analytics.frame import load_frame

    frame = load_frame(Filters())
    cons, slots, hkeys = consensus(frame), rating_slots(frame), human_keys(frame)
    view = config_view(frame, int(frame.gr_config[0]))
    by_task = [np.flatnonzero(frame.task == t) for t in range(int(frame.task.max()) + 1)]
    groups = [np.flatnonzero(frame.group == g) for g in np.unique(frame.group)]
    group_of_task: dict[int, list[np.ndarray]] = {}
    for idx in groups:
        group_of_task.setdefault(int(frame.task[idx[0]]), []).append(idx)
    start = time.perf_counter()
    for _ in range(NAIVE_RESAMPLES):
        draw = rng.integers(0, len(by_task), len(by_task))
        idx = np.concatenate([by_task[t] for t in draw])
        cohen_kappa_score(view.tier[idx], cons.tier[idx], weights="quadratic", labels=[1, 2, 3])
        krippendorff.alpha(slots[:, idx], level_of_measurement="ordinal", value_domain=[1, 2, 3])
        taus = [
            kendalltau(hkeys[g], view.key[g]).statistic
            for t in draw
            for g in group_of_task.get(int(t), [])
        ]
        float(np.nanmean(taus))
    return (time.perf_counter() - start) / NAIVE_RESAMPLES * N_RESAMPLES


def main() -> None:
    from review.analytics import snapshots
    from review.analytics.filters import Filters, SnapshotParams
    from review.models import StatsSnapshot

    rng = np.random.default_rng(7)
    if "--rebuild" in sys.argv or not complete():
        build(rng)
    else:
        call_command("migrate", verbosity=0)
    params = SnapshotParams(kind="agreement", filters=Filters().as_json(), n_resamples=N_RESAMPLES)
    StatsSnapshot.objects.all().delete()
    snapshots._enqueue = lambda snapshot_id: None  # no broker: the benchmark is the worker
    snap = snapshots.snapshot_request(params=params)

    from review.analytics.agreement_dashboard import agreement_payload
    from review.analytics.frame import load_frame

    t0 = time.perf_counter()
    frame = load_frame(Filters())
    t_load = time.perf_counter() - t0
    t0 = time.perf_counter()
    agreement_payload(frame, filters=Filters().as_json(), n_resamples=N_RESAMPLES)
    t_stats = time.perf_counter() - t0
    t0 = time.perf_counter()
    assert snapshots.snapshot_compute(snapshot_id=snap.pk)
    t_task = time.perf_counter() - t0
    print(
        f"candidates {frame.n:,}, reviews {frame.lab_pos.size:,}, grades {frame.gr_pos.size:,}, "
        f"tasks {int(frame.task.max()) + 1:,}"
    )
    print(
        f"task, full headline set, {N_RESAMPLES} resamples: {t_task:.1f} s "
        f"(load {t_load:.1f} s + statistics {t_stats:.1f} s)  target < 30 s"
    )

    client = Client()
    client.force_login(User.objects.get(username="bench-lead"))
    assert b"Computed at" in client.get("/dashboards/").content
    times = []
    for _ in range(20):
        t0 = time.perf_counter()
        client.get("/dashboards/")
        times.append(time.perf_counter() - t0)
    print(
        f"dashboard page once cached: median {statistics.median(times) * 1000:.0f} ms, "
        f"max {max(times) * 1000:.0f} ms  target < 200 ms"
    )

    naive = naive_seconds(rng)
    print(
        f"naive κ/α/τ with sklearn/krippendorff/scipy in a Python loop: {naive:.0f} s for "
        f"{N_RESAMPLES} resamples (extrapolated from {NAIVE_RESAMPLES}); "
        f"vectorized statistics are {naive / t_stats:.0f}x faster (whole headline set)"
    )


if __name__ == "__main__":
    main()
