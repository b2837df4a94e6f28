"""The toy task the adapter examples share: a completion "passes" when it contains the fix.

A real trainer runs the task's tests in a sandbox; here `evaluate` stands in for that so the
examples run anywhere a GAGAR server runs.
"""

from __future__ import annotations

from gagar_client import Attempt, Task
from gagar_client.adapters import Rollout

FIX = (
    "diff --git a/pkg/sizes.py b/pkg/sizes.py\n--- a/pkg/sizes.py\n+++ b/pkg/sizes.py\n"
    "@@ -1,3 +1,3 @@\n def f(n):\n-    return n > 1\n+    return n >= 1\n \n"
)
TASKS = {
    t: Task(id=t, repo="acme/pkg", problem_statement=f"{t}: f(1) must be true.")
    for t in ("toy-1", "toy-2")
}
COMPLETIONS = ["I changed `>` to `>=`.", "no idea", "I changed `>` to `>=` and more.", "skip"]


def evaluate_text(task_id: str, completion: str) -> Rollout:
    passed = ">=" in completion
    return Rollout(
        task=TASKS[task_id],
        attempt=Attempt(
            id="set-by-the-adapter",
            test_reward=1.0 if passed else 0.0,
            patch=FIX if passed else None,
            test_output="1 passed\n" if passed else "1 failed\n",
        ),
    )
