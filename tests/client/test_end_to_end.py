"""The training loop's side end to end, through the client, with a real Celery worker grading
on Redis and PostgreSQL: a 2-group step whose attempt ids repeat across groups is built,
submitted, waited for and fetched; each adapter is fed and its trainer's advantage code (as
reproduced in the adapter tests) gives A′ per (group, attempt) equal to the pure module."""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest
from gagar_client import Client
from gagar_client.adapters.openrlhf import GagarRewardFunc as OpenRLHFReward
from gagar_client.adapters.rllm import GagarRllm
from gagar_client.adapters.trl import GagarRewardFunc as TRLReward
from gagar_client.adapters.verl import GagarVerl

from grading.models import Group
from tests.client.helpers import (
    RUN,
    completions,
    pure_advantages,
    pure_by_completion,
    rollout_of,
    two_group_step,
)
from tests.client.test_adapter_openrlhf import openrlhf_dr_grpo
from tests.client.test_adapter_rllm import Step, Trajectory, TrajectoryGroup, collect_precomputed
from tests.client.test_adapter_trl import trl_advantages
from tests.client.test_adapter_verl import batch, token_rewards, verl_grpo
from tests.grading_service.workers import redis_broker, worker

pytestmark = [
    pytest.mark.postgres,
    pytest.mark.redis,
    pytest.mark.slow,
    pytest.mark.django_db(transaction=True),
]


@pytest.fixture
def real_worker(tmp_path: Path, settings) -> Iterator[None]:
    settings.GAGAR_SANDBOX = "none"
    with redis_broker(), worker("e2e", tmp_path):
        yield


def test_a_training_loop_side_end_to_end(live_server, token, real_worker):
    with Client(live_server.url, token) as gagar:
        # The client alone: build, submit, wait, fetch.
        gagar.submit(two_group_step(step=0))
        adv = gagar.wait(RUN, 0, deadline_s=90)
        assert adv.counts["graded"] == 2, adv.counts
        for group in Group.objects.filter(step__number=0):
            want = pure_advantages(group)
            got = {a: adv.get(group.external_id, a).adv_gagar for a in want}
            assert got == pytest.approx(want, abs=1e-12)
        assert len(adv.by_key()) == 16

        texts = completions({"t-a": 0, "t-b": 1})
        evaluate_kw = lambda *, prompt, completion, **_: rollout_of(completion)  # noqa: E731

        # TRL (one process): r′ through TRL's advantage arithmetic.
        trl = TRLReward(gagar, run=RUN, evaluate=evaluate_kw, deadline_s=90, first_step=1)
        rewards = trl(prompts=["p"] * 16, completions=texts, task_id=[t[:3] for t in texts])
        want_trl = pure_by_completion(RUN, 1)
        trl_got = trl_advantages(rewards, 8)
        assert trl_got.tolist() == pytest.approx([want_trl[t] for t in texts], abs=1e-12)

        # verl: both routes.
        shuffled, mask, lengths, index, extra = batch(texts)
        verl = GagarVerl(
            gagar, run=RUN, evaluate=lambda s, g, e: rollout_of(s), deadline_s=90, first_step=2
        )
        scores = verl.compute_score(["swe"] * 16, shuffled, [None] * 16, extra)
        token_level = token_rewards(scores, lengths)
        route1 = verl_grpo(token_level, mask, index)
        route2, _ = verl.estimator(token_level_rewards=token_level, response_mask=mask, index=index)
        want = pure_by_completion(RUN, 2)
        expected = np.array([want[t] for t in shuffled])[:, None] * mask
        assert np.abs(route1 - expected).max() < 1e-12 and np.abs(route2 - expected).max() < 1e-12

        # OpenRLHF: one sample per call, from threads; its groups become steps 0 of new tasks,
        # so it runs on a run of its own.
        openrlhf = OpenRLHFReward(
            gagar,
            run=RUN + "-openrlhf",
            n_samples_per_prompt=8,
            evaluate=lambda q, p, label: rollout_of(q),
            deadline_s=90,
        )
        with ThreadPoolExecutor(max_workers=16) as pool:
            answers = list(pool.map(lambda t: openrlhf([t], ["p"], [t[:3]]), texts))
        advantages = openrlhf_dr_grpo([a["rewards"][0] for a in answers], 8, np.ones((16, 3)))
        want = pure_by_completion(RUN + "-openrlhf", 0)
        assert advantages[:, 0].tolist() == pytest.approx([want[t] for t in texts], abs=1e-12)

        # rLLM: precomputed step advantages.
        groups = [
            TrajectoryGroup(
                f"{task}:solver",
                [
                    Trajectory(uid=f"u{i}", text=t, steps=[Step([1, 2])])
                    for i, t in enumerate(texts)
                    if t.startswith(task)
                ],
            )
            for task in ("t-a", "t-b")
        ]
        GagarRllm(gagar, run=RUN, evaluate=lambda g, t: rollout_of(t.text), deadline_s=90).apply(
            groups, step=3
        )
        want = pure_by_completion(RUN, 3)
        for traj_group in groups:
            flat = collect_precomputed(traj_group)
            expected = [want[t.text] for t in traj_group.trajectories for _ in "12"]
            assert flat == pytest.approx(expected, abs=1e-12)
