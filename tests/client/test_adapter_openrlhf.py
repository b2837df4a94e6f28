"""OpenRLHF: the reward_func's r′, fed through OpenRLHF's advantage code, gives A′.

OpenRLHF cannot be installed here (torch, Ray, vLLM); the code below follows the current source
of OpenRLHF/OpenRLHF (commit 3c3be62, 2026-08-13):
- `openrlhf/utils/agent.py` L285: `reward_func([query], [prompt], [label])`, one sample per
  call, each run in a thread (L313 `asyncio.to_thread`);
- `openrlhf/trainer/ppo_utils/experience_maker.py` L250-252: rewards sorted back to prompt
  order and reshaped to `(-1, n_samples_per_prompt)` (no sample can be dropped); L268:
  `dr_grpo` subtracts the group mean; L272 flattens; L276 `compute_reward`, then L302-307 the
  cumulative return (γ = 1) is the advantage;
- `openrlhf/models/utils.py` L109: the reward is clamped to `--reward.clip_range` (default
  ±10); L111-124: the KL term (`--algo.kl.init_coef`; zero with `--algo.kl.use_loss`) is added
  and the reward placed at the last action token.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
from gagar_client import Client
from gagar_client.adapters.openrlhf import GagarRewardFunc

from tests.client.helpers import RUN, completions, pure_by_completion, rollout_of

N = 8
L = 5


def openrlhf_dr_grpo(rewards_in_prompt_order, n, action_mask, clip=(-10.0, 10.0), kl_coef=0.0):
    grouped = np.asarray(rewards_in_prompt_order, dtype=np.float64).reshape(-1, n)
    shaped = (grouped - grouped.mean(-1, keepdims=True)).reshape(-1)
    r = np.clip(shaped, clip[0], clip[1])
    kl = np.zeros_like(action_mask)
    eos = action_mask.shape[1] - 1 - np.argmax(np.fliplr(action_mask), axis=1)
    last = np.zeros_like(kl)
    last[np.arange(len(r)), eos] = r
    token_reward = (last - kl_coef * kl) * action_mask
    returns = np.zeros_like(token_reward)
    running = np.zeros(len(r))
    for t in reversed(range(token_reward.shape[1])):
        running = token_reward[:, t] + running
        returns[:, t] = running
    return returns  # the advantages (γ = 1)


def evaluate(query, prompt, label):
    return rollout_of(query)


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_openrlhf_computes_gagar_advantages_from_the_reward_func(
    live_server, token, grading_worker
):
    texts = completions({"t-a": 0, "t-b": 1})
    with Client(live_server.url, token) as client:
        reward_func = GagarRewardFunc(
            client, run=RUN, n_samples_per_prompt=N, evaluate=evaluate, deadline_s=30
        )
        # One call per sample, each in its own thread, in no particular order.
        order = texts[::-1]
        with ThreadPoolExecutor(max_workers=len(texts)) as pool:
            answers = list(
                pool.map(lambda t: reward_func([t], ["fix it"], [t.split("|")[0]]), order)
            )
    reward_of = {t: a["rewards"][0] for t, a in zip(order, answers, strict=True)}
    assert all(a["scores"][0] in (0.0, 1.0) for a in answers)
    mask = np.array([[1.0] * (1 + i % (L - 1)) + [0.0] * (L - 1 - i % (L - 1)) for i in range(16)])
    advantages = openrlhf_dr_grpo([reward_of[t] for t in texts], N, mask)
    # Steps: each task's first group is GAGAR step 0.
    want = pure_by_completion(RUN, 0)
    for i, text in enumerate(texts):
        assert advantages[i] == pytest.approx(want[text] * mask[i], abs=1e-12), text


@pytest.mark.django_db(transaction=True)
def test_an_incomplete_group_falls_back_to_the_plain_test_reward(live_server, token):
    with Client(live_server.url, token) as client:
        reward_func = GagarRewardFunc(
            client, run=RUN, n_samples_per_prompt=N, evaluate=evaluate, collect_timeout_s=0.2
        )
        answer = reward_func(["t-a|0|0"], ["fix it"], ["t-a"])
    assert answer["rewards"] == [1.0]  # its own test reward: GRPO for the group


def test_the_real_openrlhf_reward_shaping_when_installed():
    torch = pytest.importorskip("torch")
    utils = pytest.importorskip("openrlhf.models.utils")
    r = torch.tensor([0.5, -0.25], dtype=torch.float64)
    mask = torch.tensor([[1, 1, 0], [1, 1, 1]], dtype=torch.bool)
    kl = torch.zeros(2, 3, dtype=torch.float64)
    reward = utils.compute_reward(r, 0.0, kl, action_mask=mask, reward_clip_range=(-10, 10))
    assert reward.sum(-1).tolist() == pytest.approx([0.5, -0.25], abs=1e-12)
