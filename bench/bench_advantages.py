"""Throughput of the vectorized GAGAR advantages against a plain NumPy GRPO baseline.

Synthetic training run (default 10,000 steps x 128 groups x 16 attempts) with random rewards,
tiers, ranks (many ties), infra failures, exploits and no-verdict groups. Each chunk of steps is
generated once (not timed), then the same arrays go through:

- GRPO: r - mean(r over valid), masked — what a trainer does without GAGAR;
- GAGAR: coefficients_batch + redistribute_batch (the full path a trainer would call);
- of which redistribute_batch alone.

Usage: .venv/bin/python bench/bench_advantages.py [--steps N] [--groups 128] [--group-size 16]
Target: GAGAR within 3x of GRPO.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt

# Runnable as a script from the project root without installing the package.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from grading.advantages import (
    DEFAULT_COEFFICIENTS,
    coefficients_batch,
    redistribute_batch,
)

INFRA_RATE = 0.03
EXPLOIT_RATE = 0.02
NO_VERDICT_RATE = 0.05


@dataclass
class Chunk:
    rewards: npt.NDArray[np.float64]
    valid: npt.NDArray[np.bool_]
    passing: npt.NDArray[np.bool_]
    tiers: npt.NDArray[np.int64]
    ranks: npt.NDArray[np.int64]
    fallback: npt.NDArray[np.bool_]


def make_chunk(rng: np.random.Generator, n_groups: int, group_size: int) -> Chunk:
    shape = (n_groups, group_size)
    infra = rng.random(shape) < INFRA_RATE
    exploit = ~infra & (rng.random(shape) < EXPLOIT_RATE)
    # A per-task pass rate gives the realistic mix of all-pass, none-pass and mixed groups.
    pass_rate = rng.random((n_groups, 1))
    passed = rng.random(shape) < pass_rate
    valid = ~infra
    rewards = np.where(passed & ~exploit, 1.0, 0.0)
    # Garbage on infra slots: the batch code must mask it, not rely on zeros.
    rewards[infra] = np.nan
    return Chunk(
        rewards=rewards,
        valid=valid,
        passing=valid & ~exploit & passed,
        tiers=rng.integers(1, 4, shape),
        # Ranks 1..4 in each tier: ties are frequent, as in real verdicts with ties.
        ranks=rng.integers(1, 5, shape),
        fallback=rng.random(n_groups) < NO_VERDICT_RATE,
    )


def grpo(rewards: npt.NDArray[np.float64], valid: npt.NDArray[np.bool_]) -> npt.NDArray[np.float64]:
    n = np.maximum(valid.sum(axis=1, keepdims=True), 1)
    r = np.where(valid, rewards, 0.0)
    mean = r.sum(axis=1, keepdims=True) / n
    return np.where(valid, r - mean, 0.0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=10_000)
    parser.add_argument("--groups", type=int, default=128, help="groups per step")
    parser.add_argument("--group-size", type=int, default=16)
    parser.add_argument("--chunk-steps", type=int, default=50, help="steps per chunk (memory)")
    parser.add_argument("--lambda-max", type=float, default=1.5)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--repeat", type=int, default=3, help="timed repeats per chunk (min)")
    args = parser.parse_args()

    rng = np.random.default_rng(args.seed)
    t_grpo = t_coef = t_redis = 0.0
    capped = groups_with_lambda = fallback = 0
    max_sum = 0.0
    done = 0
    while done < args.steps:
        steps = min(args.chunk_steps, args.steps - done)
        chunk = make_chunk(rng, steps * args.groups, args.group_size)

        # Interleaved, best of --repeat per chunk: the machine is shared, and the minimum is the
        # figure least disturbed by other processes.
        best = [math.inf, math.inf, math.inf]
        for _ in range(args.repeat):
            t0 = time.perf_counter()
            base = grpo(chunk.rewards, chunk.valid)
            t1 = time.perf_counter()
            coefs = coefficients_batch(
                chunk.tiers,
                chunk.ranks,
                chunk.passing,
                DEFAULT_COEFFICIENTS,
                fallback_mask=chunk.fallback,
            )
            t2 = time.perf_counter()
            out = redistribute_batch(chunk.rewards, chunk.valid, coefs, args.lambda_max)
            t3 = time.perf_counter()
            best = [min(best[0], t1 - t0), min(best[1], t2 - t1), min(best[2], t3 - t2)]

        t_grpo += best[0]
        t_coef += best[1]
        t_redis += best[2]
        # Sanity figures, outside the timed region.
        assert np.array_equal(out.adv_grpo, base)
        max_sum = max(max_sum, float(np.abs(out.adv.sum(axis=1)).max()))
        capped += int(out.capped.sum())
        groups_with_lambda += int((~np.isnan(out.lambda_raw)).sum())
        fallback += int(chunk.fallback.sum())
        done += steps

    n_groups = args.steps * args.groups
    t_gagar = t_coef + t_redis
    rows = [
        ("GRPO (masked mean)", t_grpo),
        ("GAGAR coefficients_batch", t_coef),
        ("GAGAR redistribute_batch", t_redis),
        ("GAGAR total", t_gagar),
    ]
    print(
        f"best of {args.repeat} per chunk; "
        f"{args.steps:,} steps x {args.groups} groups x {args.group_size} attempts"
        f" = {n_groups:,} groups, lambda_max={args.lambda_max}, chunks of {args.chunk_steps} steps"
    )
    print(f"{'method':<26} {'seconds':>9} {'groups/s':>14} {'ns/attempt':>11}")
    for name, seconds in rows:
        per_s = n_groups / seconds if seconds else float("inf")
        ns = seconds / (n_groups * args.group_size) * 1e9
        print(f"{name:<26} {seconds:>9.3f} {per_s:>14,.0f} {ns:>11.2f}")
    ratio = t_gagar / t_grpo if t_grpo else float("inf")
    verdict = "within" if ratio <= 3 else "NOT within"
    print(f"GAGAR / GRPO time ratio: {ratio:.2f}x ({verdict} the 3x target)")
    print(
        f"cap bound in {capped:,} of {groups_with_lambda:,} groups with passers above the mean"
        f" ({capped / max(groups_with_lambda, 1):.1%}); fallback groups {fallback:,};"
        f" max |sum A'| per group {max_sum:.1e}"
    )
    per_step(rng, args)


def per_step(rng: np.random.Generator, args: argparse.Namespace) -> None:
    """One call per training step, as a trainer without chunking makes it (context, no target).

    At 128 x 16 attempts per call the fixed cost of each NumPy call dominates: GAGAR makes a few
    dozen, GRPO five.
    """
    chunk = make_chunk(rng, args.groups, args.group_size)
    best_grpo = best_gagar = math.inf
    for _ in range(200):
        t0 = time.perf_counter()
        grpo(chunk.rewards, chunk.valid)
        t1 = time.perf_counter()
        coefs = coefficients_batch(
            chunk.tiers,
            chunk.ranks,
            chunk.passing,
            DEFAULT_COEFFICIENTS,
            fallback_mask=chunk.fallback,
        )
        redistribute_batch(chunk.rewards, chunk.valid, coefs, args.lambda_max)
        t2 = time.perf_counter()
        best_grpo, best_gagar = min(best_grpo, t1 - t0), min(best_gagar, t2 - t1)
    print(
        f"one call per step ({args.groups} groups, best of 200): GRPO {best_grpo * 1e6:.0f} us,"
        f" GAGAR {best_gagar * 1e6:.0f} us ({best_gagar / best_grpo:.1f}x; per-call overhead)"
    )


if __name__ == "__main__":
    main()
