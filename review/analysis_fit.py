"""Make (or check) the analysis grader's shipped default fit from the reviewed SWE-bench groups.

    .venv/bin/python -m review.analysis_fit          # rewrite the shipped default_fit.json
    .venv/bin/python -m review.analysis_fit --check  # exit 1 if the shipped file is stale
    .venv/bin/python -m review.analysis_fit --data ../shared/data/swebench-groups --out FILE

The held-out figures stored with the fit are leave-one-task-out predictions scored by the gate
statistics (`review.stats.gate`) against the reviewers' consensus.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

from grading.grader.analysis.devset import load
from grading.grader.analysis.fit import Prediction, Sample
from grading.grader.analysis.fit_default import DEFAULT_DATA, consensus, make_fit
from grading.grader.analysis.model import DEFAULT_FIT_PATH, Fit
from review.stats.gate import Ratings, agreement_with_ci


def ratings(
    samples: Sequence[Sample], pred: dict[tuple[str, str], Prediction]
) -> tuple[Ratings, Ratings]:
    """(grader, consensus) ratings of the samples; keys are tier·1000 + rank (lower is better)."""
    cons = [consensus(s) for s in samples]
    ps = [pred[(s.task, s.key)] for s in samples]
    grader = Ratings([p.tier for p in ps], [p.tier * 1000 + p.rank_in_tier for p in ps])
    return grader, Ratings([c[0] for c in cons], [c[1] for c in cons])


def held_out_figures(
    samples: Sequence[Sample], pred: dict[tuple[str, str], Prediction]
) -> dict[str, float]:
    grader, reference = ratings(samples, pred)
    stats = agreement_with_ci(grader, reference, [s.task for s in samples], n_resamples=1, seed=0)
    return {name: round(ci.estimate, 4) for name, ci in stats.items() if ci.estimate is not None}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--out", type=Path, default=DEFAULT_FIT_PATH)
    parser.add_argument("--check", action="store_true", help="fail if the shipped fit is stale")
    args = parser.parse_args(argv)
    fit = make_fit(load(args.data), held_out_figures, task_ids=True)
    text = fit.to_json()
    if args.check:
        current = args.out.read_text(encoding="utf-8") if args.out.exists() else ""
        if not current or not Fit.from_json(current).same_as(fit):
            print(f"{args.out} is stale: run python -m review.analysis_fit")
            return 1
        print(f"{args.out} is up to date ({fit.version})")
        return 0
    args.out.write_text(text, encoding="utf-8")
    print(f"wrote {args.out} ({fit.version})")
    for mode in ("reference", "consensus"):
        print(f"  {mode}: held out {json.dumps(fit.held_out[mode])}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
