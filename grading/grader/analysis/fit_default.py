"""The shipped default fit, made from the reviewed SWE-bench groups (`default_fit.json`).

`make_fit` fits one model on the groups with their reference patch and one with the reference
withheld (the consensus mode), each on every reviewer's labels, and stores the held-out figures
an `Evaluate` callable computes from leave-one-task-out predictions. The command that runs it
lives on the review side, which owns the agreement statistics (grading never imports review):

    .venv/bin/python -m review.analysis_fit            # rewrite default_fit.json
    .venv/bin/python -m review.analysis_fit --check    # exit 1 if it is stale

Calibrating to a team's own reviewers is the intended use: the same fit runs on their labels.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from grading.grader.analysis.catalogue import NAMES
from grading.grader.analysis.devset import Task
from grading.grader.analysis.engine import observe
from grading.grader.analysis.fit import Prediction, Sample, fit_model, leave_one_task_out
from grading.grader.analysis.model import Fit
from grading.grader.analysis.views import Reader

DEFAULT_DATA = Path(__file__).resolve().parents[3].parent / "shared" / "data" / "swebench-groups"
# Chosen a priori, not tuned on the reviews: unit L2 strength, ordinal and pairwise rows weighted
# alike, kinds as weakly shrunk as the cuts (`fit.py`). The benchmark's `--nested` run checks them.
SETTINGS: dict[str, Any] = {"c": 1.0, "pair_share": 0.5, "group_scale": 10.0}


def samples(
    tasks: Sequence[Task], *, reference: bool, readers: dict[str, Reader] | None = None
) -> list[Sample]:
    """One sample per distinct resolved patch, with every reviewer's (tier, rank)."""
    out = []
    for task in tasks:
        read = (readers or {}).get(task.instance_id)
        _, ctx, observed = observe(task.analysis_input(reference=reference, read_base=read))
        for key, obs in observed.items():
            labels = {r: (lab[key].tier, lab[key].rank_in_tier) for r, lab in task.labels.items()
                      if key in lab}  # fmt: skip
            out.append(
                Sample(task.instance_id, key, {n: o.value for n, o in obs.items()}, labels,
                       ctx.patches[key].changed_lines(), ctx.patches[key].normalised)
            )  # fmt: skip
    return out


def consensus(sample: Sample) -> tuple[float, float]:
    """(median tier, rounding a split towards the worse tier; mean ordering key) of the raters."""
    tiers = sorted(t for t, _ in sample.labels.values())
    mid = len(tiers) // 2
    tier = float(tiers[mid]) if len(tiers) % 2 else float(max(tiers[mid - 1], tiers[mid]))
    key = float(np.mean([t * 1000 + r for t, r in sample.labels.values()]))
    return tier, key


# Held-out figures from (samples, their leave-one-task-out predictions).
Evaluate = Callable[[Sequence[Sample], dict[tuple[str, str], Prediction]], dict[str, float]]


def make_fit(
    tasks: Sequence[Task],
    evaluate: Evaluate,
    *,
    name: str = "swebench-reviews",
    source: str = "shared/data/swebench-groups (groups.jsonl + reviews/rater-*.jsonl)",
    task_ids: bool = False,
) -> Fit:
    """One model per mode on every task; `name` prefixes the version (a digest of the labels),
    `source` says where the labels came from; `task_ids` records the tasks in `trained_on` (a
    gate must not approve a fit on tasks it was fitted on)."""
    models = {}
    figures: dict[str, Any] = {}
    for mode, with_ref in (("reference", True), ("consensus", False)):
        s = samples(tasks, reference=with_ref)
        models[mode] = fit_model(s, **SETTINGS)
        figures[mode] = evaluate(s, leave_one_task_out(s, **SETTINGS))
    labels = sorted(
        (t.instance_id, r, sha, lab.tier, lab.rank_in_tier)
        for t in tasks
        for r, by_sha in t.labels.items()
        for sha, lab in by_sha.items()
    )
    digest = hashlib.sha256(
        json.dumps({"labels": labels, "features": NAMES, "settings": SETTINGS}).encode()
    ).hexdigest()[:12]
    trained_on: dict[str, Any] = {
        "data": source,
        "tasks": len(tasks),
        "candidates": sum(len(t.patches) for t in tasks),
        "raters": sorted({r for t in tasks for r in t.labels}),
    }
    if task_ids:
        trained_on["task_ids"] = sorted(t.instance_id for t in tasks)
    return Fit(
        version=f"{name}-{digest}",
        reference=models["reference"],
        consensus=models["consensus"],
        settings=dict(SETTINGS),
        trained_on=trained_on,
        held_out={
            "kind": "leave-one-task-out, against the reviewers' consensus (median tier)",
            **figures,
        },
    )
