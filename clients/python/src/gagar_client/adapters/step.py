"""What every adapter shares: a step's rollouts → groups by task → submit → wait → rows."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from gagar_client.bundle import Attempt, Group, Task, default_group_id
from gagar_client.client import Client
from gagar_client.models import AdvantageRow, Advantages


@dataclass(frozen=True)
class Rollout:
    """One trainer sample as GAGAR sees it: its task (inline, or the id of a task the server
    already has) and the attempt (test reward, status, patch, trajectory…)."""

    task: Task | str
    attempt: Attempt

    @property
    def task_id(self) -> str:
        return self.task if isinstance(self.task, str) else self.task.id

    def with_attempt_id(self, attempt_id: str) -> Rollout:
        return dataclasses.replace(self, attempt=dataclasses.replace(self.attempt, id=attempt_id))


@dataclass
class StepScorer:
    """Submit one step's rollouts and return the `gagar.v2` row of each, in the same order.

    Rollouts of one task form one group (in the order given); every attempt id must be unique
    within its task. The wait is bounded by `deadline_s`: groups not graded by then come back
    as plain GRPO (`fallback`), so a trainer never stalls.
    """

    client: Client
    run: str
    deadline_s: float = 600.0
    config: str | None = None
    advantage_params: dict[str, Any] = dataclasses.field(default_factory=dict)

    def groups(self, step: int, rollouts: Sequence[Rollout]) -> list[Group]:
        by_task: dict[str, list[Rollout]] = {}
        for r in rollouts:
            by_task.setdefault(r.task_id, []).append(r)
        out = []
        for task_id, items in by_task.items():
            first = items[0].task
            out.append(
                Group(
                    run=self.run,
                    step=step,
                    task=first if isinstance(first, Task) else None,
                    task_id=task_id if isinstance(first, str) else None,
                    attempts=[r.attempt for r in items],
                )
            )
        return out

    def score(self, step: int, rollouts: Sequence[Rollout]) -> list[AdvantageRow]:
        self.client.submit(self.groups(step, rollouts), config=self.config)
        advantages = self.client.wait(
            self.run, step, deadline_s=self.deadline_s, config=self.config, **self.advantage_params
        )
        return rows_for(advantages, self.run, step, rollouts)


def rows_for(
    advantages: Advantages, run: str, step: int, rollouts: Sequence[Rollout]
) -> list[AdvantageRow]:
    """Each rollout's row, looked up by (group id, attempt id), never by position."""
    return [advantages.get(default_group_id(run, step, r.task_id), r.attempt.id) for r in rollouts]


def reward_equivalent_or_mean(row: AdvantageRow) -> float:
    """r′ for a trainer that cannot drop a sample: an infra failure gets R̄, which leaves the
    group mean at R̄ and its own advantage at 0."""
    if row.reward_equivalent is not None:
        return row.reward_equivalent
    return row.mean_reward if row.mean_reward is not None else 0.0
