"""rLLM: A′ written as precomputed step advantages is what rLLM trains on.

rLLM cannot be installed here (torch); the code below follows the current source of
rllm-org/rllm (commit 9beb6e0, 2026-08-15), `rllm/trainer/algorithms/advantage.py`:
- L199-202: with `use_precomputed_advantage` and any `step.advantage` set, a group's advantages
  come from `_collect_precomputed_advantages` instead of an estimator;
- L139-167: a float `step.advantage` is broadcast to `len(step.response_ids)` tokens (L154).
The config flag is `rllm/trainer/algorithms/config.py` L285 (`rllm.algorithm.` in YAML).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest
from gagar_client import Client
from gagar_client.adapters.rllm import GagarRllm

from tests.client.helpers import RUN, completions, pure_by_completion, rollout_of


@dataclass
class Step:  # the fields of rllm.types.Step that the advantage code reads
    response_ids: list[int]
    advantage: Any = None


@dataclass
class Trajectory:
    uid: str
    text: str
    steps: list[Step] = field(default_factory=list)


@dataclass
class TrajectoryGroup:
    group_id: str
    trajectories: list[Trajectory]

    @property
    def task_id(self) -> str:
        return self.group_id.split(":")[0]


def collect_precomputed(group: TrajectoryGroup) -> list[float]:
    flat: list[float] = []
    for traj in group.trajectories:
        for step in traj.steps:
            if isinstance(step.advantage, float):
                step.advantage = [step.advantage] * len(step.response_ids)
            elif not isinstance(step.advantage, list):
                raise ValueError("step.advantage must be a scalar or a list")
            flat.extend(step.advantage)
    return flat


def evaluate(group: TrajectoryGroup, traj: Trajectory):
    rollout = rollout_of(traj.text)
    assert rollout.task_id == group.task_id
    return rollout


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_rllm_trains_on_gagar_advantages(live_server, token, grading_worker):
    texts = completions({"t-a": 0, "t-b": 1})
    groups = [
        TrajectoryGroup(
            f"{task}:solver",
            [
                Trajectory(
                    uid=f"u{i}-{task}", text=t, steps=[Step([1, 2, 3]), Step([4] * (i % 3 + 1))]
                )
                for i, t in enumerate(texts)
                if t.startswith(task)
            ],
        )
        for task in ("t-a", "t-b")
    ]
    with Client(live_server.url, token) as client:
        GagarRllm(client, run=RUN, evaluate=evaluate, deadline_s=30).apply(groups, step=5)
    want = pure_by_completion(RUN, 5)
    for group in groups:
        flat = collect_precomputed(group)
        expected = [
            want[traj.text]
            for traj in group.trajectories
            for s in traj.steps
            for _ in s.response_ids
        ]
        assert flat == pytest.approx(expected, abs=1e-12)


def test_the_real_rllm_collection_when_rllm_is_installed():
    advantage = pytest.importorskip("rllm.trainer.algorithms.advantage")
    types = pytest.importorskip("rllm.types")
    config = pytest.importorskip("rllm.trainer.algorithms.config")
    step = types.Step(response_ids=[1, 2, 3], advantage=0.25)
    group = types.TrajectoryGroup(
        trajectories=[types.Trajectory(steps=[step], reward=1.0)], group_id="t:solver"
    )
    cfg = config.AlgorithmConfig(use_precomputed_advantage=True)
    advantage.collect_reward_and_advantage_from_trajectory_groups([group], cfg)
    assert step.advantage == [0.25, 0.25, 0.25]
