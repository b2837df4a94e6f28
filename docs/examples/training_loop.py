"""A training loop's side of GAGAR Review: submit a step, wait, train on the advantages.

    python docs/examples/training_loop.py --url http://127.0.0.1:8000 --token gagar_… step.jsonl

`step.jsonl` is a `gagar.group.v1` bundle (one group per line). The server grades each group on
its workers; this script waits for the step's advantages with a deadline, so it never waits
longer than that: groups not graded by then come back as plain GRPO (`status: fallback`).

Attempt ids are unique within a group only (every group of a step may have an attempt "r0"), so
the advantages are keyed by (group id, attempt id). Needs gagar-client
(`pip install ./clients/python`).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from gagar_client import Advantages, Client, Submission, validate


def submit_step(gagar: Client, bundle: bytes, *, config: str | None = None) -> Submission:
    """Send the groups (validated first); safe to retry: the same content replays the answer."""
    groups = validate(json.loads(line) for line in bundle.splitlines() if line.strip())
    return gagar.submit(groups, config=config)


def fetch_advantages(
    gagar: Client, run: str, step: int, *, deadline_s: float, config: str | None = None
) -> Advantages:
    """Wait up to `deadline_s`; what is not graded by then is plain GRPO, flagged."""
    return gagar.wait(run, step, deadline_s=deadline_s, config=config)


def advantages_by_key(advantages: Advantages) -> dict[tuple[str, str], float]:
    """What the trainer consumes: one sequence-level advantage per (group id, attempt id);
    infra failures get 0 (drop them from the batch or mask them)."""
    return advantages.adv_gagar()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("bundle", type=Path)
    parser.add_argument("--url", default="http://127.0.0.1:8000")
    parser.add_argument("--token", required=True)
    parser.add_argument("--deadline", type=float, default=60.0)
    parser.add_argument("--config", default=None)
    args = parser.parse_args(argv)

    with Client(args.url, args.token) as gagar:
        submitted = submit_step(gagar, args.bundle.read_bytes(), config=args.config)
        run, step = submitted.groups[0].run, submitted.groups[0].step
        adv = fetch_advantages(gagar, run, step, deadline_s=args.deadline, config=args.config)
    print(f"{run} step {step}: {adv.counts} (waited {adv.waited_seconds} s)")
    for group in adv.groups:
        raw = group.raw
        flag = f" [{group.status}: {group.fallback_reason}]" if group.fallback else ""
        print(f"  {group.group}: λ={raw['lambda_applied']} capped={raw['capped']}{flag}")
        for a in group.attempts or ():
            print(f"    {a.attempt:<12} A={a.adv_gagar:+.4f}  r'={a.reward_equivalent}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
