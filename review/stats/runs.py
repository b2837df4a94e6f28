"""Run-level statistics from plain records: λ-cap frequency, exploit/infra rates, run audit."""

from collections import defaultdict
from collections.abc import Hashable, Iterable
from dataclasses import dataclass

import numpy as np

from review.stats.bootstrap import BootstrapCI, Seed, cluster_bootstrap_ci

RunStep = tuple[Hashable, int]


@dataclass(frozen=True)
class GroupLambdaRecord:
    run: Hashable
    step: int
    # None when λ was not computed: fallback (no verdict) or no positive advantage to rescale.
    capped: bool | None
    mean_shift: float = 0.0  # the re-centring shift; 0 when the cap does not bind


@dataclass(frozen=True)
class LambdaCapStats:
    n_groups: int
    n_with_lambda: int
    n_capped: int
    cap_frequency: float | None  # capped / groups where λ was computed
    mean_shift_capped: float | None  # mean |shift| over capped groups
    mean_shift_all: float | None  # mean |shift| over groups where λ was computed (0 if uncapped)


def lambda_cap_by_step(records: Iterable[GroupLambdaRecord]) -> dict[RunStep, LambdaCapStats]:
    """How often λ_max binds, per (run, step); the denominator is groups where λ exists."""
    rows: dict[RunStep, list[GroupLambdaRecord]] = defaultdict(list)
    for rec in records:
        rows[(rec.run, rec.step)].append(rec)
    out: dict[RunStep, LambdaCapStats] = {}
    for key, recs in rows.items():
        with_l = [r for r in recs if r.capped is not None]
        shifts = np.abs([r.mean_shift if r.capped else 0.0 for r in with_l])
        capped = [abs(r.mean_shift) for r in with_l if r.capped]
        out[key] = LambdaCapStats(
            n_groups=len(recs),
            n_with_lambda=len(with_l),
            n_capped=len(capped),
            cap_frequency=len(capped) / len(with_l) if with_l else None,
            mean_shift_capped=float(np.mean(capped)) if capped else None,
            mean_shift_all=float(np.mean(shifts)) if with_l else None,
        )
    return out


@dataclass(frozen=True)
class AttemptStatusRecord:
    run: Hashable
    step: int
    status: str  # "valid" | "infra_failed" | "exploit_confirmed"


@dataclass(frozen=True)
class StatusRates:
    n_attempts: int
    infra_rate: float  # infra_failed / all attempts
    exploit_rate: float | None  # exploit_confirmed / attempts that were not infra failures


def status_rates_by_step(records: Iterable[AttemptStatusRecord]) -> dict[RunStep, StatusRates]:
    """Exploit and infra rates per (run, step).

    Infra failures are excluded from the exploit denominator: an attempt that never ran cannot
    have exploited the tests.
    """
    counts: dict[RunStep, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for rec in records:
        counts[(rec.run, rec.step)][rec.status] += 1
    out: dict[RunStep, StatusRates] = {}
    for key, c in counts.items():
        total = sum(c.values())
        ran = total - c["infra_failed"]
        out[key] = StatusRates(
            n_attempts=total,
            infra_rate=c["infra_failed"] / total,
            exploit_rate=c["exploit_confirmed"] / ran if ran else None,
        )
    return out


@dataclass(frozen=True)
class AuditCandidate:
    """A passing candidate with a tier in a blind audit of two runs."""

    run: Hashable
    task: Hashable
    tier: int
    # Weighted quality score (rubric, 1-5); None when unknown (e.g. every rubric score its
    # reviewers gave was left pre-filled): still in the tier distribution, not in quality.
    quality: float | None


@dataclass(frozen=True)
class RunAudit:
    tier_share: dict[Hashable, dict[int, float]]  # run → tier → share of its passing candidates
    mean_quality: dict[Hashable, float | None]  # over its candidates with a quality
    n_with_quality: dict[Hashable, int]
    win_rate: BootstrapCI  # run a's candidates beat run b's, pooled pairs, ties 0.5
    n_pairs: int
    n_tasks: int  # tasks where both runs have a passing candidate with a quality


def audit_two_runs(
    candidates: Iterable[AuditCandidate],
    run_a: Hashable,
    run_b: Hashable,
    *,
    n_resamples: int = 2000,
    seed: Seed = None,
) -> RunAudit:
    """Tier distribution, mean quality and pairwise win rate of run a over run b.

    The tier distribution counts every candidate; mean quality and the win rate only those with
    a quality. The win rate compares every (a, b) pair of such candidates on the same task by
    quality score (ties 0.5) and pools the pairs; its CI resamples tasks.
    """
    cands = [c for c in candidates if c.run in (run_a, run_b)]
    tier_share: dict[Hashable, dict[int, float]] = {}
    mean_quality: dict[Hashable, float | None] = {}
    n_with_quality: dict[Hashable, int] = {}
    for run in (run_a, run_b):
        mine = [c for c in cands if c.run == run]
        tiers = np.array([c.tier for c in mine])
        tier_share[run] = {t: float(np.mean(tiers == t)) if mine else 0.0 for t in (1, 2, 3)}
        scored = [c.quality for c in mine if c.quality is not None]
        mean_quality[run] = float(np.mean(scored)) if scored else None
        n_with_quality[run] = len(scored)

    per_task: dict[Hashable, dict[Hashable, list[float]]] = defaultdict(lambda: defaultdict(list))
    for c in cands:
        if c.quality is not None:
            per_task[c.task][c.run].append(c.quality)
    sums = []
    for runs in per_task.values():
        qa, qb = np.array(runs[run_a]), np.array(runs[run_b])
        if qa.size and qb.size:
            diff = qa[:, None] - qb[None, :]
            sums.append([(diff > 0).sum() + 0.5 * (diff == 0).sum(), diff.size])
    table = np.array(sums, dtype=np.float64).reshape(-1, 2)
    ci = cluster_bootstrap_ci(
        lambda s: np.divide(s[:, 0], s[:, 1], out=np.full(len(s), np.nan), where=s[:, 1] > 0),
        table,
        n_resamples=n_resamples,
        seed=seed,
    )
    return RunAudit(
        tier_share, mean_quality, n_with_quality, ci, int(table[:, 1].sum()), len(table)
    )
