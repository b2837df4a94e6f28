"""The twelve sample attempts, in group order, and what each one was designed to show.

``DESIGNED`` is ground truth for tests of the graders; it never goes into group.jsonl.
"""

from grading.sample.failing import A9, A10, A11, A12
from grading.sample.flawed import A5, A6, A7, A8
from grading.sample.passing import A1, A2, A3, A4
from grading.sample.steps import Attempt

ATTEMPTS: list[Attempt] = [A1, A2, A3, A4, A5, A6, A7, A8, A9, A10, A11, A12]
DESIGNED: dict[str, str] = {attempt.id: attempt.design for attempt in ATTEMPTS}
