"""rLLM: GAGAR's A′ as precomputed step advantages (`rllm.algorithm.use_precomputed_advantage:
true`).

In a real run, call `gagar.apply(trainer_state.trajectory_groups, step=...)` in your backend's
`compute_advantages` before `super().compute_advantages(...)`. Here small stand-ins for
rLLM's TrajectoryGroup / Trajectory / Step (the attributes rLLM reads) are used.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass, field
from typing import Any

from _toy import COMPLETIONS, evaluate_text
from gagar_client import Client
from gagar_client.adapters.rllm import GagarRllm


@dataclass
class Step:
    response_ids: list[int]
    advantage: Any = None


@dataclass
class Trajectory:
    uid: str
    text: str
    steps: list[Step] = field(default_factory=lambda: [Step([1, 2, 3])])


@dataclass
class TrajectoryGroup:
    group_id: str
    trajectories: list[Trajectory]

    @property
    def task_id(self) -> str:
        return self.group_id.split(":")[0]


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--url", required=True)
    p.add_argument("--token", required=True)
    p.add_argument("--run", default="example-rllm")
    p.add_argument("--step", type=int, default=0)
    p.add_argument("--deadline", type=float, default=60)
    args = p.parse_args(argv)
    groups = [
        TrajectoryGroup(
            f"{t}:solver", [Trajectory(f"{t}-{i}", c) for i, c in enumerate(COMPLETIONS)]
        )
        for t in ("toy-1", "toy-2")
    ]
    with Client(args.url, args.token) as client:
        gagar = GagarRllm(
            client,
            run=args.run,
            evaluate=lambda group, traj: evaluate_text(group.task_id, traj.text),
            deadline_s=args.deadline,
        )
        gagar.apply(groups, step=args.step)
    for group in groups:
        for traj in group.trajectories:
            print(f"{group.task_id}  A'={traj.steps[0].advantage:+.4f}  {traj.text}")


if __name__ == "__main__":
    main()
