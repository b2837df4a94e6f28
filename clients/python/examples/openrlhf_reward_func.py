"""OpenRLHF: GAGAR as `reward_func.py` (`--reward.remote_url /path/to/this/file.py`).

Train with `--algo.advantage.estimator dr_grpo --algo.kl.use_loss --rollout.n_samples_per_prompt
4` (and GAGAR_URL / GAGAR_TOKEN in the environment of the vLLM engine actors). OpenRLHF imports
`reward_func` from this file. Run directly, it plays OpenRLHF: one call per sample, from threads.
"""

from __future__ import annotations

import argparse
import os
from concurrent.futures import ThreadPoolExecutor

from _toy import COMPLETIONS, evaluate_text
from gagar_client import Client
from gagar_client.adapters.openrlhf import GagarRewardFunc


def make(url: str, token: str, run: str, deadline_s: float = 600.0) -> GagarRewardFunc:
    return GagarRewardFunc(
        Client(url, token),
        run=run,
        n_samples_per_prompt=len(COMPLETIONS),
        evaluate=lambda query, prompt, label: evaluate_text(label, query),
        deadline_s=deadline_s,
    )


if os.environ.get("GAGAR_URL") and os.environ.get("GAGAR_TOKEN"):
    reward_func = make(os.environ["GAGAR_URL"], os.environ["GAGAR_TOKEN"], "openrlhf")


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--url", required=True)
    p.add_argument("--token", required=True)
    p.add_argument("--run", default="example-openrlhf")
    p.add_argument("--deadline", type=float, default=60)
    args = p.parse_args(argv)
    func = make(args.url, args.token, args.run, args.deadline)
    samples = [(t, c) for t in ("toy-1", "toy-2") for c in COMPLETIONS]
    with ThreadPoolExecutor(max_workers=len(samples)) as pool:
        answers = list(pool.map(lambda s: func([s[1]], ["Fix f."], [s[0]]), samples))
    for (task, text), answer in zip(samples, answers, strict=True):
        print(f"{task}  r'={float(answer['rewards'][0]):+.4f}  {text}")


if __name__ == "__main__":
    main()
