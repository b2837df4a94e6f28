"""TRL: the reward function's r′, fed through TRL's own advantage arithmetic, gives A′.

TRL cannot be installed here (torch); the arithmetic below follows the current source of
huggingface/trl (commit f2cd577, 2026-07-24), `trl/trainer/grpo_trainer.py`:
- L1618: dataset columns are passed to the reward function as lists (`reward_kwargs`);
- L1663: a `None` reward becomes NaN; L1702: rewards are gathered across processes;
- L2679, L2684: rows whose every reward is NaN are unscorable and stay NaN;
- L2685: `mean_grouped_rewards = torch.nanmean(rewards.view(-1, num_generations), dim=1)`;
- L2705-2707: `advantages = rewards - mean_grouped_rewards`, divided by `std + 1e-4` unless
  `scale_rewards == "none"`; L2730: `nan_to_num(advantages, nan=0.0)`;
- L2734-2738: each process keeps `advantages[process_index*len(prompts):(process_index+1)*…]`.
NumPy float64 stands in for torch float32, so the identity is checked to 1e-12.
"""

from __future__ import annotations

import threading

import numpy as np
import pytest
from gagar_client import Client
from gagar_client.adapters.trl import GagarRewardFunc

from tests.client.helpers import RUN, completions, pure_by_completion, rollout_of

G = 8
RANKS = 4  # 16 completions, 4 per process: each group is split over two processes


def trl_advantages(rewards: list[float | None], num_generations: int) -> np.ndarray:
    r = np.array([np.nan if x is None else x for x in rewards], dtype=np.float64)
    grouped = r.reshape(-1, num_generations)
    mean = np.repeat(np.nanmean(grouped, axis=1), num_generations)
    advantages = r - mean  # scale_rewards="none": no division
    return np.nan_to_num(advantages, nan=0.0)


class Gather:
    """accelerate's gather_object across RANKS threads: every rank gets all lists, rank order."""

    def __init__(self) -> None:
        self.parts: dict[int, list] = {}
        self.barrier = threading.Barrier(RANKS)

    def for_rank(self, rank: int):
        def gather(items):
            self.parts[rank] = items
            self.barrier.wait(timeout=60)
            return [x for r in range(RANKS) for x in self.parts[r]]

        return gather


def evaluate(*, prompt, completion, task_id, **columns):
    assert completion.startswith(task_id)  # the dataset column arrived per completion
    return rollout_of(completion)


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_trl_computes_gagar_advantages_from_the_reward_function(live_server, token, grading_worker):
    texts = completions({"t-a": 0, "t-b": 1})
    per_rank = len(texts) // RANKS
    gather = Gather()
    results: dict[int, list[float | None]] = {}
    errors: list[BaseException] = []

    def rank(r: int) -> None:
        try:
            with Client(live_server.url, token) as client:
                func = GagarRewardFunc(
                    client,
                    run=RUN,
                    evaluate=evaluate,
                    deadline_s=30,
                    process_index=r,
                    gather=gather.for_rank(r),
                )
                mine = texts[r * per_rank : (r + 1) * per_rank]
                results[r] = func(
                    prompts=["fix it"] * per_rank,
                    completions=mine,
                    completion_ids=[[1]] * per_rank,
                    task_id=[t.split("|")[0] for t in mine],
                    trainer_state=None,
                )
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=rank, args=(r,)) for r in range(RANKS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not errors, errors
    gathered = [x for r in range(RANKS) for x in results[r]]
    assert gathered.count(None) == 2  # the two infra failures
    advantages = trl_advantages(gathered, G)
    want = pure_by_completion(RUN, 0)
    for r in range(RANKS):
        local = advantages[r * per_rank : (r + 1) * per_rank]  # TRL's process slice
        for text, got in zip(texts[r * per_rank : (r + 1) * per_rank], local, strict=True):
            assert got == pytest.approx(want[text], abs=1e-12), text


def test_with_std_scaling_trl_would_not_reproduce_a_prime():
    # Why the docs insist on scale_rewards="none": r′ = [R̄ + A′] scaled by σ(r′) changes A′.
    r_eq = [0.9, 0.6, 0.25, 0.25]
    a_prime = np.array(r_eq) - np.mean(r_eq)
    scaled = a_prime / (np.std(r_eq, ddof=1) + 1e-4)
    assert not np.allclose(scaled, a_prime)
    assert np.allclose(trl_advantages(r_eq, 4), a_prime, atol=1e-12)


def test_the_real_trl_advantage_code_when_trl_is_installed():
    torch = pytest.importorskip("torch")
    pytest.importorskip("trl")
    from trl.trainer.utils import nanstd

    rewards = torch.tensor([0.9, float("nan"), 0.25, 0.25], dtype=torch.float64)
    mean = torch.nanmean(rewards.view(-1, 4), dim=1).repeat_interleave(4)
    std = nanstd(rewards.view(-1, 4), dim=1)
    assert torch.isfinite(std).all()
    advantages = torch.nan_to_num(rewards - mean, nan=0.0)
    assert advantages.tolist() == pytest.approx(
        trl_advantages([0.9, None, 0.25, 0.25], 4).tolist(), abs=1e-12
    )
