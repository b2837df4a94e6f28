"""A training loop's side of GAGAR Review: submit a step, wait, train on the advantages.

    python docs/examples/training_loop.py --url http://127.0.0.1:8000 --token gagar_… step.jsonl

`step.jsonl` is a `gagar.group.v1` bundle (one group per line). The server grades each group on
its workers; this script asks for the step's advantages with a deadline, so it never waits longer
than that: groups not graded by then come back as plain GRPO (`status: fallback`). Needs httpx.
"""

from __future__ import annotations

import argparse
import sys
import uuid
from pathlib import Path
from typing import Any

import httpx


def submit_step(
    client: httpx.Client, bundle: bytes, *, config: str | None = None
) -> list[dict[str, Any]]:
    """Send the groups; safe to retry (same Idempotency-Key → same answer, no duplicates)."""
    key = str(uuid.uuid5(uuid.NAMESPACE_URL, bundle.decode("utf-8", "replace")))
    params = {"config": config} if config else {}
    for attempt in range(3):
        try:
            response = client.post(
                "/api/v1/training/groups",
                content=bundle,
                params=params,
                headers={"Content-Type": "application/x-ndjson", "Idempotency-Key": key},
            )
            break
        except httpx.TransportError:
            if attempt == 2:
                raise
    response.raise_for_status()
    groups: list[dict[str, Any]] = response.json()["groups"]
    return groups


def fetch_advantages(
    client: httpx.Client, run: str, step: int, *, deadline_s: float, config: str | None = None
) -> dict[str, Any]:
    """Wait up to `deadline_s` on the server; what is not graded by then is plain GRPO."""
    params: dict[str, Any] = {"deadline": deadline_s}
    if config:
        params["config"] = config
    response = client.get(
        f"/api/v1/training/runs/{run}/steps/{step}/advantages",
        params=params,
        timeout=deadline_s + 30,
    )
    response.raise_for_status()
    payload: dict[str, Any] = response.json()
    return payload


def advantages_by_attempt(payload: dict[str, Any]) -> dict[str, float]:
    """What the trainer consumes: one sequence-level advantage per attempt (infra → 0)."""
    return {
        a["attempt_external_id"]: a["adv_gagar"]
        for group in payload["groups"]
        for a in group["attempts"] or []
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("bundle", type=Path)
    parser.add_argument("--url", default="http://127.0.0.1:8000")
    parser.add_argument("--token", required=True)
    parser.add_argument("--deadline", type=float, default=60.0)
    parser.add_argument("--config", default=None)
    args = parser.parse_args(argv)

    bundle = args.bundle.read_bytes()
    headers = {"Authorization": f"Bearer {args.token}"}
    with httpx.Client(base_url=args.url, headers=headers, timeout=60) as client:
        groups = submit_step(client, bundle, config=args.config)
        run, step = groups[0]["run"], groups[0]["step"]
        payload = fetch_advantages(client, run, step, deadline_s=args.deadline, config=args.config)
    print(f"{run} step {step}: {payload['counts']} (waited {payload['waited_seconds']} s)")
    for group in payload["groups"]:
        flag = f" [{group['status']}: {group['fallback_reason']}]" if group["fallback"] else ""
        print(f"  {group['task_id']}: λ={group['lambda_applied']} capped={group['capped']}{flag}")
        for a in group["attempts"] or []:
            name, adv, r_eq = a["attempt_external_id"], a["adv_gagar"], a["reward_equivalent"]
            print(f"    {name:<12} A={adv:+.4f}  r'={r_eq}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
