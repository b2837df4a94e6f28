"""rLLM: GAGAR's A′ as precomputed step advantages (`rllm.algorithm.use_precomputed_advantage:
true`).

With that flag, rLLM's `collect_reward_and_advantage_from_trajectory_groups` takes each step's
`advantage` as it is (a float is broadcast over the step's response tokens) instead of running
its estimator. `GagarRllm.apply(trajectory_groups)` submits the groups, waits with a deadline
and writes A′ into every step of every trajectory (infra failures: 0.0). Call it where the
groups are final and before advantages are computed, e.g. in your backend's
`compute_advantages` before `super().compute_advantages(...)`:

    class GagarBackend(VerlBackend):
        async def compute_advantages(self, trainer_state, algorithm_config, **kw):
            gagar.apply(trainer_state.trajectory_groups, step=trainer_state.global_step)
            await super().compute_advantages(trainer_state, algorithm_config, **kw)

A group is keyed by `TrajectoryGroup.task_id` and an attempt by `Trajectory.uid`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from gagar_client.adapters.step import Rollout, StepScorer
from gagar_client.client import Client

# evaluate(trajectory_group, trajectory) → the Rollout (task and attempt) of one trajectory.
Evaluate = Callable[[Any, Any], Rollout]


class GagarRllm:
    def __init__(
        self,
        client: Client,
        *,
        run: str,
        evaluate: Evaluate,
        deadline_s: float = 600.0,
        config: str | None = None,
        advantage_params: dict[str, Any] | None = None,
    ) -> None:
        self.scorer = StepScorer(
            client=client,
            run=run,
            deadline_s=deadline_s,
            config=config,
            advantage_params=dict(advantage_params or {}),
        )
        self.evaluate = evaluate

    def apply(self, trajectory_groups: Sequence[Any], *, step: int) -> list[Any]:
        """Submit, wait, and set `step.advantage = A′` on every step; returns the rows."""
        rollouts: list[Rollout] = []
        owners: list[Any] = []
        for group in trajectory_groups:
            for traj in group.trajectories:
                rollouts.append(self.evaluate(group, traj).with_attempt_id(str(traj.uid)))
                owners.append(traj)
        rows = self.scorer.score(step, rollouts)
        for traj, row in zip(owners, rows, strict=True):
            for s in traj.steps:
                s.advantage = float(row.adv_gagar) if row.included else 0.0
        return rows
