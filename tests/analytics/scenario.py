"""A varied study for the browser test and the screenshot: two runs, three steps, two grader
configurations (one with a second replica), three reviewers, fix requests and λ-cap rows."""

from __future__ import annotations

import random

from grading.models import GraderConfig
from review.models import Label
from review.models.reviewing import CRITERIA
from tests.analytics.factories import (
    TaskFactory,
    advantages_row,
    grade_group,
    make_study,
    review_group,
)

TIERS = ["t1", "t2", "t3"]


def rich_study(seed: int = 7) -> None:
    rng = random.Random(seed)
    # Both runs attempt the same tasks at each step, so the audit can pair their candidates.
    tasks = {step: [TaskFactory() for _ in range(8)] for step in (1, 2, 3)}
    for run in ("baseline", "gagar"):
        for step in (1, 2, 3):
            study = make_study(8, 4, run=run, step=step, reviewers=3, tasks=tasks[step])
            for group, atts in zip(study.groups, study.attempts, strict=True):
                truth = [rng.choice([1, 1, 2, 2, 3]) for _ in atts]
                noisy = [min(3, max(1, t + rng.choice([-1, 0, 0, 0, 1]))) for t in truth]
                scores = [5.2 - t + rng.uniform(-0.6, 0.6) for t in noisy]
                rubric = [
                    {c: {"score": min(5, max(1, 5 - t + rng.choice([-1, 0, 1])))} for c in CRITERIA}
                    for t in noisy
                ]
                grade_group(group, atts, noisy, config="frontier-t0", scores=scores, rubric=rubric)
                grade_group(
                    group,
                    atts,
                    [min(3, max(1, t + rng.choice([0, 0, 1]))) for t in truth],
                    config="frontier-t0",
                    replica=1,
                    scores=scores,
                    rubric=rubric,
                )
                grade_group(
                    group,
                    atts,
                    truth,
                    config="trained-grader",
                    scores=[5 - t + rng.uniform(-0.3, 0.3) for t in truth],
                )
                for r in study.reviewers:
                    tiers = [
                        TIERS[min(2, max(0, t - 1 + rng.choice([-1, 0, 0, 0, 1])))] for t in truth
                    ]
                    review_group(
                        study.campaign,
                        group,
                        atts,
                        r,
                        tiers,
                        rubric=[min(5, max(1, 5 - t + rng.choice([-1, 0, 1]))) for t in truth],
                        mergeable=rng.choice(list(Label.Mergeability.values)),
                        fix_ms=[None if t == "t1" else rng.randint(20_000, 400_000) for t in tiers],
                    )
                cfg = GraderConfig.objects.get(name="frontier-t0")
                advantages_row(
                    group, cfg, capped=rng.random() < 0.25 * step, shift=rng.uniform(0.01, 0.05)
                )
