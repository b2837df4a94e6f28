"""verl: both routes, fed through verl's own advantage code, give A′.

verl cannot be installed here (torch, GPUs); the code below follows the current source of
volcengine/verl (commit b178a3c, 2026-01-29):
- `verl/trainer/ppo/ray_trainer.py` L1375-1384: `uid` is a fresh uuid4 per prompt each step and
  the batch is repeated `rollout.n` times interleaved; L1455: `_balance_batch` reorders the batch
  *before* the reward (L1482) and nothing reorders it before `compute_advantage` (L1586);
  L200 and L216: a registered estimator is called with `token_level_rewards`, `response_mask`,
  `config` and `index` = the uids.
- `verl/workers/reward_manager/batch.py` L70: `compute_score(data_sources=…, solution_strs=…,
  ground_truths=…, extra_infos=…)`; L103: a dict's `"score"` is the reward; L110: it is put at
  the last response token (`reward_tensor[i, length - 1]`).
- `verl/trainer/ppo/core_algos.py` L267-330 `compute_grpo_outcome_advantage`: scores = the
  token rewards summed (L303), minus the uid group's mean (L327, with
  `norm_adv_by_std_in_grpo=False`), broadcast over the response mask (L328).
"""

from __future__ import annotations

import random
import uuid
from collections import defaultdict

import numpy as np
import pytest
from gagar_client import Client
from gagar_client.adapters.verl import GagarVerl
from gagar_client.errors import GagarError

from tests.client.helpers import RUN, completions, pure_by_completion, rollout_of

L = 6  # response length


def verl_grpo(token_level_rewards, response_mask, index, norm_adv_by_std_in_grpo=False):
    scores = token_level_rewards.sum(axis=-1)
    by_uid = defaultdict(list)
    for i in range(len(scores)):
        by_uid[index[i]].append(scores[i])
    mean = {k: (np.mean(v) if len(v) > 1 else 0.0) for k, v in by_uid.items()}
    std = {k: (np.std(v, ddof=1) if len(v) > 1 else 1.0) for k, v in by_uid.items()}
    out = scores.copy()
    for i in range(len(scores)):
        out[i] = scores[i] - mean[index[i]]
        if norm_adv_by_std_in_grpo:
            out[i] /= std[index[i]] + 1e-6
    return out[:, None] * response_mask


def batch(texts: list[str], seed: int = 7):
    """A verl batch after repeat + balance_batch: uids per prompt, order shuffled."""
    uid = {t: str(uuid.uuid4()) for t in {x.split("|")[0] for x in texts}}
    order = list(range(len(texts)))
    random.Random(seed).shuffle(order)
    texts = [texts[i] for i in order]
    lengths = [2 + (i % (L - 2)) for i in range(len(texts))]
    mask = np.array([[1.0] * n + [0.0] * (L - n) for n in lengths])
    index = np.array([uid[t.split("|")[0]] for t in texts], dtype=object)
    extra = [{"task_id": t.split("|")[0]} for t in texts]
    return texts, mask, lengths, index, extra


def evaluate(solution_str, ground_truth, extra_info):
    return rollout_of(solution_str)


def token_rewards(scores: list[dict], lengths: list[int]) -> np.ndarray:
    out = np.zeros((len(scores), L))
    for i, s in enumerate(scores):
        out[i, lengths[i] - 1] = s["score"]
    return out


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_both_verl_routes_give_gagar_advantages(live_server, token, grading_worker):
    texts, mask, lengths, index, extra = batch(completions({"t-a": 0, "t-b": 1}))
    with Client(live_server.url, token) as client:
        gagar = GagarVerl(client, run=RUN, evaluate=evaluate, deadline_s=30)
        scores = gagar.compute_score(["swe"] * len(texts), texts, [None] * len(texts), extra)
        rewards = token_rewards(scores, lengths)
        # Route 1: r′ through verl's GRPO, mean only.
        mean_only = verl_grpo(rewards, mask, index)
        # Route 2: the registered estimator, called as compute_advantage calls it.
        adv, returns = gagar.estimator(
            token_level_rewards=rewards, response_mask=mask, index=index, config=None
        )
    want = pure_by_completion(RUN, 0)
    for i, text in enumerate(texts):
        expected = want[text] * mask[i]
        assert mean_only[i] == pytest.approx(expected, abs=1e-12), text
        assert adv[i] == pytest.approx(expected, abs=1e-12) and (returns[i] == adv[i]).all()
    # Infra failures: r′ = R̄ keeps them at 0 through the mean-only route too.
    infra = [i for i, t in enumerate(texts) if t.endswith("|6")]
    assert len(infra) == 2
    assert all(np.abs(mean_only[i]).max() < 1e-12 for i in infra)


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_the_estimator_refuses_a_batch_that_is_not_the_one_it_scored(
    live_server, token, grading_worker
):
    texts, mask, lengths, index, extra = batch(completions({"t-a": 0, "t-b": 1}), seed=3)
    with Client(live_server.url, token) as client:
        gagar = GagarVerl(client, run=RUN, evaluate=evaluate, deadline_s=30)
        scores = gagar.compute_score(["swe"] * len(texts), texts, [None] * len(texts), extra)
    rewards = token_rewards(scores, lengths)
    rewards[[0, 1]] = rewards[[1, 0]]
    if np.allclose(rewards[0].sum(), rewards[1].sum()):
        rewards[0, lengths[0] - 1] += 1.0  # a KL penalty in the reward, say
    with pytest.raises(GagarError, match="sample 0"):
        gagar.estimator(token_level_rewards=rewards, response_mask=mask, index=index)


def test_the_real_verl_estimators_when_verl_is_installed():
    torch = pytest.importorskip("torch")
    core_algos = pytest.importorskip("verl.trainer.ppo.core_algos")
    rewards = np.zeros((4, L))
    rewards[:, 2] = [0.9, 0.6, 0.25, 0.25]
    mask = np.ones((4, L))
    index = np.array(["u"] * 4, dtype=object)
    real, _ = core_algos.compute_grpo_outcome_advantage(
        token_level_rewards=torch.tensor(rewards),
        response_mask=torch.tensor(mask),
        index=index,
        norm_adv_by_std_in_grpo=False,
    )
    assert real.numpy() == pytest.approx(verl_grpo(rewards, mask, index), abs=1e-12)
    gagar = GagarVerl(None, run="r", evaluate=evaluate)  # type: ignore[arg-type]
    gagar.register("gagar-test")
    assert core_algos.get_adv_estimator_fn("gagar-test") == gagar.estimator
