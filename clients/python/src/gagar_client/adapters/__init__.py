"""Trainer adapters: each turns a trainer's batch into GAGAR groups, submits them, waits with a
deadline and hands back what that trainer consumes, keyed by (group id, attempt id).

- `trl`: a `GRPOTrainer` reward function returning r′ = R̄ + A′ (None for infra failures).
- `verl`: a `@register_adv_est` estimator returning A′, and a batch reward manager
  `compute_score` returning r′.
- `openrlhf`: a `reward_func` returning r′ (infra rows R̄, since groups have a fixed size).
- `rllm`: writes A′ into `step.advantage` for `use_precomputed_advantage: true`.

None imports its trainer at import time; the trainers need torch and GPUs, this package does not.
"""

from gagar_client.adapters.step import Rollout, StepScorer

__all__ = ["Rollout", "StepScorer"]
