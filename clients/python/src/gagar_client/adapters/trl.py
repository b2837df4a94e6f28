"""TRL `GRPOTrainer`: a reward function whose rewards make TRL compute GAGAR's A′.

    from trl import GRPOConfig, GRPOTrainer
    reward = GagarRewardFunc(client, run="run-7", evaluate=run_tests, process_index=rank,
                             gather=accelerate.utils.gather_object)
    trainer = GRPOTrainer(model, reward_funcs=[reward],
                          args=GRPOConfig(scale_rewards="none", ...), train_dataset=ds)

It returns r′ = R̄ + A′ for each completion and `None` for infra failures: TRL turns None into
NaN, leaves it out of the group mean (`torch.nanmean`) and gives it advantage 0. With
`scale_rewards="none"` TRL's advantage is r′ − mean(r′) = A′ exactly (any other setting divides
by σ(r′) + 1e-4, which changes the scale). Use one reward function only (weights add them).

Per-rank slicing: TRL calls reward functions on each process with that process's slice of the
completions, and a group's completions may sit on several processes. The function gathers every
process's rollouts (`gather`, e.g. `accelerate.utils.gather_object`), every process submits the
same step (the content hash makes that one import), and each process returns the rows of its own
completions looked up by (group id, attempt id), never by position.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from gagar_client.adapters.step import Rollout, StepScorer
from gagar_client.client import Client

Evaluate = Callable[..., Rollout]
Gather = Callable[[list[Rollout]], list[Rollout]]


def _single_process(items: list[Rollout]) -> list[Rollout]:
    return items


class GagarRewardFunc:
    """A TRL reward function. `evaluate(prompt=…, completion=…, **dataset_columns)` runs the
    tests of one completion and returns its Rollout (the task, and the attempt with its test
    reward, status, patch and trajectory; the attempt id is set here: `p<rank>-<index>`)."""

    def __init__(
        self,
        client: Client,
        *,
        run: str,
        evaluate: Evaluate,
        deadline_s: float = 600.0,
        config: str | None = None,
        process_index: int = 0,
        gather: Gather = _single_process,
        first_step: int = 0,
    ) -> None:
        self.__name__ = "gagar"  # TRL names reward columns after reward_func.__name__
        self.scorer = StepScorer(client=client, run=run, deadline_s=deadline_s, config=config)
        self.evaluate = evaluate
        self.process_index = process_index
        self.gather = gather
        # One call per generation batch on every process, so the counter stays in step.
        self.step = first_step

    def rollouts(
        self, prompts: Sequence[Any], completions: Sequence[Any], columns: dict[str, Any]
    ) -> list[Rollout]:
        n = len(prompts)
        per_row = {k: v for k, v in columns.items() if isinstance(v, list) and len(v) == n}
        return [
            self.evaluate(
                prompt=prompts[i],
                completion=completions[i],
                **{k: v[i] for k, v in per_row.items()},
            ).with_attempt_id(f"p{self.process_index}-{i}")
            for i in range(n)
        ]

    def __call__(
        self, prompts: Sequence[Any], completions: Sequence[Any], **kwargs: Any
    ) -> list[float | None]:
        columns = {k: v for k, v in kwargs.items() if k not in ("completion_ids",)}
        mine = self.rollouts(prompts, completions, columns)
        everyone = self.gather(mine)
        step, self.step = self.step, self.step + 1
        rows = {
            (r.task_id, r.attempt.id): row
            for r, row in zip(everyone, self.scorer.score(step, everyone), strict=True)
        }
        out: list[float | None] = []
        for r in mine:
            row = rows[(r.task_id, r.attempt.id)]
            out.append(row.reward_equivalent if row.included else None)
        return out
