"""Grader quality against engineers: the analysis grader, the heuristic grader and two baselines.

Reads ../shared/data/swebench-groups in place: `groups.jsonl` (`gold_patch` is the reference),
`reviews/rater-*.jsonl` (two blind expert reviews of 16 groups; candidates joined on the SHA-256
of the patch's UTF-8 text; only distinct resolved patches are candidates). Every figure is on
held-out tasks: the analysis grader and the "smaller diff" baseline are refitted with each task
left out (leave-one-task-out), the heuristic grader has nothing to fit.

* analysis grader: `grading.grader.analysis`, reference patch given; and again with the
  reference withheld (its consensus mode, as for training groups without a reference);
* heuristic grader: its pure rules (`heuristic_rules.extract` + `score_group`) called directly on
  the patches with the test literals and test paths its backend derives (the agent loop adds
  nothing to what it scores, only tool round trips and a workspace);
* smaller diff: rank by changed lines, tiers from thresholds fitted the same way;
* random: mean over 200 draws of random orders and tiers drawn from the training tier shares.

Then the reviewers against each other (the ceiling), a paired task-bootstrap of the analysis
grader minus "smaller diff", an ablation (each feature group removed, refitted held out) and the
time to grade one real 10-candidate group (`pytest-dev__pytest-11143`) beside the heuristic's.
Usage: python bench/bench_grader_quality.py [--data DIR] [--mirrors DIR] [--resamples 2000]
`--mirrors` points at bare or plain clones named owner/name, owner__name or name: the base files
then come from `git show <base_commit>:<path>` and mirror-backed figures are printed beside.
"""

from __future__ import annotations

import argparse
import math
import re
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from grading.grader.analysis.catalogue import FEATURES, GROUPS, NAMES  # noqa: E402
from grading.grader.analysis.devset import Task, load  # noqa: E402
from grading.grader.analysis.engine import analyse_group  # noqa: E402
from grading.grader.analysis.fit import (  # noqa: E402
    Prediction,
    Sample,
    leave_one_task_out,
)
from grading.grader.analysis.fit_default import SETTINGS, samples  # noqa: E402
from grading.grader.analysis.model import load_default_fit  # noqa: E402
from grading.grader.heuristic_rules import extract, literals, score_group  # noqa: E402
from grading.grader.inputs import Rubric  # noqa: E402
from grading.grader.patchinfo import parse_patch  # noqa: E402
from review.analysis_fit import ratings  # noqa: E402
from review.stats.gate import (  # noqa: E402
    Ratings,
    agreement_with_ci,
    paired_difference_with_ci,
)

Preds = dict[tuple[str, str], Prediction]
TIMED_GROUP = "pytest-dev__pytest-11143"


def heuristic(tasks: list[Task]) -> Preds:
    out: Preds = {}
    for t in tasks:
        test_text = t.test_patch + "\n" + "\n".join(t.test_names)
        lits = literals(test_text) | {
            p for n in t.test_names for p in re.findall(r"\[([^\]]+)\]", n)
        }
        paths = {n.split("::", 1)[0] for n in t.test_names if n.split("::", 1)[0].endswith(".py")}
        paths |= {ln[6:].strip() for ln in t.test_patch.splitlines() if ln.startswith("+++ b/")}
        keys = sorted(t.patches)
        alias = {k: _alias(i) for i, k in enumerate(keys)}
        feats = {
            alias[k]: extract(alias[k], True, parse_patch(t.patches[k]), events=0,
                              error_events=(), test_literals=lits, test_paths=paths)
            for k in keys
        }  # fmt: skip
        verdict = score_group(feats, Rubric())
        for k in keys:
            c = verdict["candidates"][alias[k]]
            out[(t.instance_id, k)] = Prediction(c["weighted_score"], c["tier"], c["rank_in_tier"])
    return out


def _alias(i: int) -> str:
    return chr(ord("A") + i) if i < 26 else "A" + chr(ord("A") + i - 26)


def smaller_diff(base: list[Sample]) -> Preds:
    sized = [Sample(s.task, s.key, {"log_size": math.log1p(s.size)}, s.labels, s.size, s.same)
             for s in base]  # fmt: skip
    return leave_one_task_out(sized, features=["log_size"], **SETTINGS)


def random_mean(base: list[Sample], draws: int = 200) -> dict[str, float]:
    rng = np.random.default_rng(0)
    tasks = [s.task for s in base]
    _, cons = ratings(base, {(s.task, s.key): Prediction(0, 1, 1) for s in base})
    shares = np.bincount(np.asarray(cons.tier, dtype=int), minlength=4)[1:] / len(base)
    totals: dict[str, list[float]] = {}
    for _ in range(draws):
        tier = rng.choice([1, 2, 3], size=len(base), p=shares)
        key = tier * 1000 + rng.permutation(len(base))
        stats = agreement_with_ci(Ratings(tier, key), cons, tasks, n_resamples=1, seed=0)
        for name, ci in stats.items():
            if ci.estimate is not None:
                totals.setdefault(name, []).append(ci.estimate)
    return {name: float(np.mean(v)) for name, v in totals.items()}


def rater(base: list[Sample], name: str) -> Ratings:
    labs = [s.labels.get(name) for s in base]
    return Ratings([lab[0] if lab else np.nan for lab in labs],
                   [lab[0] * 1000 + lab[1] if lab else np.nan for lab in labs])  # fmt: skip


def fmt(ci, digits: int = 2) -> str:  # type: ignore[no-untyped-def]
    if ci.estimate is None:
        return "—"
    if ci.low is None or ci.n_resamples <= 1:
        return f"{ci.estimate:.{digits}f}"
    return f"{ci.estimate:.{digits}f} [{ci.low:.{digits}f}, {ci.high:.{digits}f}]"


def mirror_reader(mirrors: Path, task: Task) -> Callable[[str], str | None] | None:
    owner, _, name = task.repo.partition("/")
    for repo in (mirrors / owner / name, mirrors / f"{owner}__{name}", mirrors / name):
        if repo.exists():
            return _GitReader(_git_dir(repo), task.base_commit)
    return None


class _GitReader:
    """Files at the base commit of a local mirror (`git show`), cached."""

    def __init__(self, git_dir: Path, commit: str) -> None:
        self.git_dir, self.commit = git_dir, commit
        self.cache: dict[str, str | None] = {}

    def __call__(self, path: str) -> str | None:
        if path not in self.cache:
            cmd = ["git", "--git-dir", str(self.git_dir), "show", f"{self.commit}:{path}"]
            done = subprocess.run(cmd, capture_output=True, check=False)
            ok = done.returncode == 0
            self.cache[path] = done.stdout.decode("utf-8", "replace") if ok else None
        return self.cache[path]


def _git_dir(repo: Path) -> Path:
    return repo / ".git" if (repo / ".git").exists() else repo


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument(
        "--data", type=Path, default=ROOT.parent / "shared" / "data" / "swebench-groups"
    )
    ap.add_argument("--mirrors", type=Path)
    ap.add_argument("--resamples", type=int, default=2000)
    args = ap.parse_args()
    tasks = load(args.data)
    t0 = time.perf_counter()
    with_ref = samples(tasks, reference=True)
    no_ref = samples(tasks, reference=False)
    print(f"{len(tasks)} tasks, {len(with_ref)} candidates; features measured in "
          f"{time.perf_counter() - t0:.1f} s")  # fmt: skip
    task_ids = [s.task for s in with_ref]
    graders: dict[str, Preds] = {
        "analysis (held out)": leave_one_task_out(with_ref, **SETTINGS),
        "analysis, no reference": leave_one_task_out(no_ref, **SETTINGS),
        "heuristic (rules)": heuristic(tasks),
        "smaller diff (held out)": smaller_diff(with_ref),
    }
    if args.mirrors:
        readers = {t.instance_id: rd for t in tasks if (rd := mirror_reader(args.mirrors, t))}
        print(f"mirrors found for {len(readers)} of {len(tasks)} tasks")
        mirrored = samples(tasks, reference=True, readers=readers)
        graders["analysis + mirrors (held out)"] = leave_one_task_out(mirrored, **SETTINGS)
    refs = {
        "consensus": ratings(with_ref, graders["heuristic (rules)"])[1],
        "rater-1": rater(with_ref, "rater-1"),
        "rater-2": rater(with_ref, "rater-2"),
    }
    as_ratings = {name: ratings(with_ref, p)[0] for name, p in graders.items()}
    n = args.resamples

    print(f"\n## Against the reviewers' consensus (task-bootstrap 95% CI, {n} resamples)")
    cols = ["kappa", "alpha", "exact", "t3_recall", "concordance", "tau_b", "top1"]
    print("| grader | " + " | ".join(cols) + " | top1 chance |")
    print("|---" * (len(cols) + 2) + "|")
    for name, r in as_ratings.items():
        st = agreement_with_ci(r, refs["consensus"], task_ids, n_resamples=n, seed=1)
        print(f"| {name} | " + " | ".join(fmt(st[c]) for c in cols)
              + f" | {fmt(st['top1_chance'])} |")  # fmt: skip
    rnd = random_mean(with_ref)
    print("| random (mean of 200) | " + " | ".join(f"{rnd.get(c, float('nan')):.2f}" for c in cols)
          + f" | {rnd['top1_chance']:.2f} |")  # fmt: skip

    print("\n## κ / pairwise concordance against each reference (reviewers: the ceiling)")
    print("| grader | consensus | rater-1 | rater-2 |\n|---|---|---|---|")
    rows = dict(as_ratings)
    rows["rater-1"] = refs["rater-1"]
    rows["rater-2"] = refs["rater-2"]
    for name, r in rows.items():
        cells = []
        for ref_name, ref in refs.items():
            if name == ref_name or (name.startswith("rater") and ref_name == "consensus"):
                cells.append("—")
                continue
            st = agreement_with_ci(r, ref, task_ids, n_resamples=1, seed=0)
            cells.append(f"{st['kappa'].estimate:.2f} / {st['concordance'].estimate:.3f}")
        print(f"| {name} | " + " | ".join(cells) + " |")

    print("\n## Paired task bootstrap: analysis − smaller diff (vs consensus)")
    diff = paired_difference_with_ci(as_ratings["analysis (held out)"],
                                     as_ratings["smaller diff (held out)"], refs["consensus"],
                                     task_ids, n_resamples=n, seed=2)  # fmt: skip
    for stat, ci in diff.items():
        verdict = "real gain" if ci.low is not None and ci.low > 0 else "not shown"
        print(f"  {stat}: {fmt(ci, 3)}  ({verdict})")

    print("\n## Ablation (held out, vs consensus): each feature group removed and refitted")
    print("| features | kappa | concordance | T3 recall | exact |\n|---|---|---|---|---|")
    for label, feats in [("all", list(NAMES))] + [
        (f"without {g}", [f.name for f in FEATURES if f.group != g]) for g in GROUPS
    ]:
        p = leave_one_task_out(with_ref, features=feats, **SETTINGS)
        st = agreement_with_ci(ratings(with_ref, p)[0], refs["consensus"], task_ids,
                               n_resamples=1, seed=0)  # fmt: skip
        print(f"| {label} | {st['kappa'].estimate:.3f} | {st['concordance'].estimate:.3f} | "
              f"{st['t3_recall'].estimate:.2f} | {st['exact'].estimate:.2f} |")  # fmt: skip

    fit = load_default_fit()
    print(f"\n## Shipped fit {fit.version}: weights (reference mode), cuts {fit.reference.cuts}")
    print("  " + ", ".join(f"{k}={v:.2f}" for k, v in fit.reference.weights.items() if v))
    _timing(args.data)
    return 0


def _timing(data: Path) -> None:
    task = next(t for t in load(data, reviewed_only=False) if t.instance_id == TIMED_GROUP)
    inp = task.analysis_input()
    fit = load_default_fit()

    def analysis() -> None:
        analyse_group(inp, fit)

    def rules() -> None:
        heuristic([task])

    times = {}
    for name, fn in (("heuristic rules", rules), ("analysis grader", analysis)):
        runs = []
        for _ in range(5):
            t0 = time.perf_counter()
            fn()
            runs.append(time.perf_counter() - t0)
        times[name] = statistics.median(runs)
    print(f"\n## Time to grade {TIMED_GROUP} ({len(task.patches)} distinct candidates, "
          "patches only, median of 5)")  # fmt: skip
    for name, sec in times.items():
        print(f"  {name}: {sec * 1000:.0f} ms")
    ratio = times["analysis grader"] / times["heuristic rules"]
    print(f"  ratio analysis / heuristic: {ratio:.1f}x (target: analysis <= 3 s)")


if __name__ == "__main__":
    sys.exit(main())
