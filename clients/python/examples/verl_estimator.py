"""verl: GAGAR through the batch reward manager (r′) and as an advantage estimator (A′).

In a real run (driver process, `reward_model.launch_reward_fn_async=False`):

    gagar = GagarVerl(client, run="run-7", evaluate=run_tests)
    gagar.register("gagar")                        # algorithm.adv_estimator=gagar
    compute_score = gagar.compute_score            # custom_reward_function.name=compute_score
                                                   # reward_model.reward_manager=batch

Here the two calls verl makes are made by hand with a small batch (NumPy instead of torch).
"""

from __future__ import annotations

import argparse

import numpy as np
from _toy import COMPLETIONS, evaluate_text
from gagar_client import Client
from gagar_client.adapters.verl import GagarVerl


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--url", required=True)
    p.add_argument("--token", required=True)
    p.add_argument("--run", default="example-verl")
    p.add_argument("--deadline", type=float, default=60)
    args = p.parse_args(argv)
    tasks = [t for t in ("toy-1", "toy-2") for _ in COMPLETIONS]
    texts = COMPLETIONS * 2
    with Client(args.url, args.token) as client:
        gagar = GagarVerl(
            client,
            run=args.run,
            evaluate=lambda text, truth, info: evaluate_text(info["task_id"], text),
            deadline_s=args.deadline,
        )
        scores = gagar.compute_score(
            ["toy"] * len(texts), texts, [None] * len(texts), [{"task_id": t} for t in tasks]
        )
    mask = np.ones((len(texts), 3))
    rewards = np.zeros_like(mask)
    rewards[:, -1] = [s["score"] for s in scores]
    advantages, _ = gagar.estimator(token_level_rewards=rewards, response_mask=mask, index=tasks)
    for task, text, s, a in zip(tasks, texts, scores, advantages[:, 0], strict=True):
        print(f"{task}  r'={s['score']:+.4f}  A'={a:+.4f}  {text}")


if __name__ == "__main__":
    main()
