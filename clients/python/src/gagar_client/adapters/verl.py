"""verl: GAGAR's A′ as an advantage estimator, or r′ through the batch reward manager.

Both routes use one `GagarVerl` object, created in the driver (the process that runs
`RayPPOTrainer.fit`, with `reward_model.launch_reward_fn_async=False`):

1. **Reward-equivalent** (`reward_model.reward_manager=batch`, `custom_reward_function` naming
   `compute_score`): r′ = R̄ + A′ per sample (infra failures R̄). With
   `algorithm.adv_estimator=grpo algorithm.norm_adv_by_std_in_grpo=False` verl computes
   r′ − mean(r′) per prompt = A′.
2. **A′ directly** (`algorithm.adv_estimator=gagar` after `gagar.register()`): the estimator
   returns the A′ that `compute_score` fetched for the same batch, broadcast over the response
   mask; infra failures get 0. Use this with `normalize_std` on the server, or when the reward
   is changed after scoring (it refuses a batch whose rewards differ from the r′ it returned,
   e.g. with `algorithm.use_kl_in_reward=True`; pass `check_rewards=False` to accept that).

Samples are keyed by a stable task id from `extra_info[task_key]` and their rollout index (the
k-th sample of that task in the batch the reward manager sees), because verl's `uid` is a fresh
uuid4 per step. verl reorders the batch (`balance_batch`) *before* the reward, not between the
reward and the advantage, so the estimator sees the scored order; it checks that it does.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from gagar_client.adapters.step import Rollout, StepScorer, reward_equivalent_or_mean
from gagar_client.client import Client
from gagar_client.errors import GagarError

Evaluate = Callable[[str, Any, dict[str, Any]], Rollout]
# r′ travels through verl's float32 reward tensor.
_FLOAT32_TOLERANCE = 1e-5


class GagarVerl:
    def __init__(
        self,
        client: Client,
        *,
        run: str,
        evaluate: Evaluate,
        deadline_s: float = 600.0,
        config: str | None = None,
        task_key: str = "task_id",
        first_step: int = 0,
        check_rewards: bool = True,
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
        self.task_key = task_key
        self.step = first_step
        self.check_rewards = check_rewards
        self._last: list[tuple[str, float, float]] | None = None  # (task, r′, A′) per position

    def compute_score(
        self,
        data_sources: Sequence[Any],
        solution_strs: Sequence[str],
        ground_truths: Sequence[Any],
        extra_infos: Sequence[dict[str, Any]],
        **kwargs: Any,
    ) -> list[dict[str, Any]]:
        """verl's batch reward function: one call per step with the whole batch."""
        seen: dict[str, int] = {}
        rollouts = []
        for text, truth, info in zip(solution_strs, ground_truths, extra_infos, strict=True):
            task = str((info or {})[self.task_key])
            k = seen[task] = seen.get(task, -1) + 1
            rollouts.append(self.evaluate(text, truth, info).with_attempt_id(f"r{k}"))
        step, self.step = self.step, self.step + 1
        rows = self.scorer.score(step, rollouts)
        out, last = [], []
        for r, row in zip(rollouts, rows, strict=True):
            r_eq = reward_equivalent_or_mean(row)
            last.append((r.task_id, r_eq, row.adv_gagar))
            out.append(
                {
                    "score": r_eq,
                    "gagar_adv": row.adv_gagar,
                    "gagar_test_reward": row.test_reward,
                    "gagar_fallback": row.fallback,
                }
            )
        self._last = last
        return out

    def estimator(
        self,
        token_level_rewards: Any,
        response_mask: Any,
        index: Any = None,
        config: Any = None,
        **kwargs: Any,
    ) -> tuple[Any, Any]:
        """The `@register_adv_est` function: (advantages, returns), both A′ · response_mask."""
        if self._last is None:
            raise GagarError("no scored batch: compute_score must run before the estimator")
        last, self._last = self._last, None
        scores = token_level_rewards.sum(-1)
        if len(scores) != len(last):
            raise GagarError(f"batch of {len(scores)} samples, scored {len(last)}")
        if self.check_rewards:
            for i, (_, r_eq, _) in enumerate(last):
                if abs(float(scores[i]) - r_eq) > _FLOAT32_TOLERANCE:
                    raise GagarError(
                        f"sample {i}: reward {float(scores[i])!r} is not the r′ {r_eq!r} scored "
                        "for it (batch reordered, or the reward changed after scoring)"
                    )
        if index is not None:
            task_of_uid: dict[Any, str] = {}
            for i, (task, _, _) in enumerate(last):
                if task_of_uid.setdefault(index[i], task) != task:
                    raise GagarError(f"uid {index[i]!r} holds samples of two tasks")
        values = [a for _, _, a in last]
        if hasattr(token_level_rewards, "new_tensor"):  # torch
            adv = token_level_rewards.new_tensor(values).unsqueeze(-1) * response_mask
        else:  # NumPy arrays (the tests reproduce verl's arithmetic without torch)
            import numpy as np

            adv = np.asarray(values, dtype=token_level_rewards.dtype)[:, None] * response_mask
        return adv, adv

    def register(self, name: str = "gagar") -> None:
        """Register the estimator with verl (`algorithm.adv_estimator=<name>`)."""
        from verl.trainer.ppo.core_algos import register_adv_est

        register_adv_est(name)(self.estimator)
