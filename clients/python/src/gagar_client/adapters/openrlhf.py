"""OpenRLHF: a `reward_func` (for `--reward.remote_url /path/to/reward_func.py`) returning r′.

    # reward_func.py
    from gagar_client import Client
    from gagar_client.adapters.openrlhf import GagarRewardFunc
    reward_func = GagarRewardFunc(Client(URL, TOKEN), run="run-7", n_samples_per_prompt=8,
                                  evaluate=run_tests)

Train with `--algo.advantage.estimator dr_grpo` (r − group mean, no std), `--algo.kl.use_loss`
(or `--algo.kl.init_coef 0`) so no KL penalty is added to the reward, and a `--reward.clip_range`
wider than r′ (the default ±10 is). OpenRLHF then computes r′ − mean(r′) = A′ per sample.

OpenRLHF reshapes the rewards to `(-1, n_samples_per_prompt)`, so no sample can be dropped: an
infra failure is given R̄, which leaves the group mean at R̄ and its advantage at 0.

OpenRLHF calls the function once per sample, each from a thread (`asyncio.to_thread`). The
function collects a prompt's samples (the label names the task) until it has
`n_samples_per_prompt`, submits that group, waits for its advantages and answers every waiting
sample. If the group does not complete within `collect_timeout_s` (its samples went to another
vLLM engine process), every sample of it gets its plain test reward, which is plain GRPO for the
group. Keep `n_samples_per_prompt` × prompts in flight within the thread pool's size.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from gagar_client.adapters.step import Rollout, StepScorer, reward_equivalent_or_mean
from gagar_client.client import Client

Evaluate = Callable[[str, str, Any], Rollout]


@dataclass
class _Pending:
    rollouts: list[Rollout] = field(default_factory=list)
    done: threading.Event = field(default_factory=threading.Event)
    rewards: list[float] | None = None


class GagarRewardFunc:
    """`reward_func(queries, prompts, labels)` → {"rewards", "scores", "extra_logs"}."""

    def __init__(
        self,
        client: Client,
        *,
        run: str,
        n_samples_per_prompt: int,
        evaluate: Evaluate,
        deadline_s: float = 600.0,
        collect_timeout_s: float = 600.0,
        config: str | None = None,
        task_of: Callable[[Any], str] = str,
    ) -> None:
        self.scorer = StepScorer(client=client, run=run, deadline_s=deadline_s, config=config)
        self.n = n_samples_per_prompt
        self.evaluate = evaluate
        self.collect_timeout_s = collect_timeout_s
        self.task_of = task_of
        self._lock = threading.Lock()
        self._open: dict[str, _Pending] = {}
        # GAGAR step of a task's next group: the reward function never learns the trainer's
        # step, so each task's k-th group is step k (unique per run, step and task).
        self._rounds: dict[str, int] = {}

    def __call__(
        self, queries: Sequence[str], prompts: Sequence[str], labels: Sequence[Any], **kwargs: Any
    ) -> dict[str, Any]:
        rewards, scores = [], []
        for query, prompt, label in zip(queries, prompts, labels, strict=True):
            reward, test_reward = self._one(query, prompt, label)
            rewards.append(reward)
            scores.append(test_reward)
        return {"rewards": _tensor(rewards), "scores": _tensor(scores), "extra_logs": {}}

    def _one(self, query: str, prompt: str, label: Any) -> tuple[float, float]:
        task = self.task_of(label)
        rollout = self.evaluate(query, prompt, label)
        with self._lock:
            pending = self._open.setdefault(task, _Pending())
            k = len(pending.rollouts)
            rollout = rollout.with_attempt_id(f"r{k}")
            pending.rollouts.append(rollout)
            complete = len(pending.rollouts) == self.n
            if complete:
                del self._open[task]
                step = self._rounds.get(task, 0)
                self._rounds[task] = step + 1
        test_reward = float(rollout.attempt.test_reward)
        if complete:
            try:
                rows = self.scorer.score(step, pending.rollouts)
                pending.rewards = [reward_equivalent_or_mean(row) for row in rows]
            finally:
                pending.done.set()
        elif not pending.done.wait(self.collect_timeout_s):
            with self._lock:
                still_open = self._open.get(task) is pending
                if still_open:
                    del self._open[task]  # a late sample starts a new group
            if still_open:
                # Incomplete here: no sample of it gets r′, so the group is plain GRPO.
                return test_reward, test_reward
            # Complete and being scored (the submit and wait take up to deadline_s): every
            # sample must get the same kind of reward, so wait for the answer.
            pending.done.wait()
        if pending.rewards is None:  # scoring failed: plain GRPO for the whole group
            return test_reward, test_reward
        return pending.rewards[k], test_reward


def _tensor(values: list[float]) -> Any:
    try:
        import torch
    except ImportError:
        return values
    return torch.tensor(values, dtype=torch.float32)
