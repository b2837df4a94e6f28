"""TRL: GAGAR as a GRPOTrainer reward function (run: --url URL --token TOKEN).

In a real run:

    trainer = GRPOTrainer(model, reward_funcs=[reward], train_dataset=ds,
                          args=GRPOConfig(scale_rewards="none", num_generations=4, ...))

with `process_index=accelerator.process_index, gather=accelerate.utils.gather_object` and a
dataset column `task_id`. Here the trainer's call is made by hand, with the same arguments.
"""

from __future__ import annotations

import argparse

from _toy import COMPLETIONS, evaluate_text
from gagar_client import Client
from gagar_client.adapters.trl import GagarRewardFunc


def evaluate(*, prompt: str, completion: str, task_id: str, **columns: object):  # type: ignore[no-untyped-def]
    return evaluate_text(task_id, completion)


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--url", required=True)
    p.add_argument("--token", required=True)
    p.add_argument("--run", default="example-trl")
    p.add_argument("--deadline", type=float, default=60)
    args = p.parse_args(argv)
    with Client(args.url, args.token) as client:
        reward = GagarRewardFunc(client, run=args.run, evaluate=evaluate, deadline_s=args.deadline)
        tasks = [t for t in ("toy-1", "toy-2") for _ in COMPLETIONS]
        rewards = reward(
            prompts=["Fix f."] * len(tasks), completions=COMPLETIONS * 2, task_id=tasks
        )
    for task, completion, r in zip(tasks, COMPLETIONS * 2, rewards, strict=True):
        print(f"{task}  r'={r!s:<22} {completion}")


if __name__ == "__main__":
    main()
