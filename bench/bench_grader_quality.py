"""Grader quality against engineers: the analysis grader, the heuristic grader and two baselines.

Reads ../shared/data/swebench-groups in place: `groups.jsonl` (`gold_patch` is the reference),
`reviews/rater-*.jsonl` (two blind expert reviews of 16 groups; candidates joined on the SHA-256
of the patch's UTF-8 text; only distinct resolved patches are candidates). Every figure is on
held-out tasks: the analysis grader is refitted with each task left out (leave-one-task-out),
the heuristic grader and the issue's "smaller diff" have nothing to fit.

* analysis grader: `grading.grader.analysis`, reference patch given; and again with the
  reference withheld (its consensus mode, as for training groups without a reference);
* heuristic grader: its pure rules (`heuristic_rules.extract` + `score_group`) called directly on
  the patches with the test literals and test paths its backend derives (the agent loop adds
  nothing to what it scores, only tool round trips and a workspace);
* smaller diff, as the issue measures it: each group ordered by changed lines (equal sizes tie,
  a tie counting ½), its smallest third T1, middle third T2, largest third T3 (a candidate's
  tier is 1 + ⌊3·(candidates strictly smaller) / (group size)⌋); nothing fitted. The variant
  this benchmark printed before (log size with leave-one-task-out fitted cuts, equal sizes
  ordered arbitrarily) is printed beside;
* random: mean over 200 draws of random orders and tiers drawn from the training tier shares.

Then the reviewers against each other (the ceiling), a paired task-bootstrap of the analysis
grader minus "smaller diff", an ablation (each feature group removed, and each structural part
of the fit switched off, refitted held out) and the time to grade one real 10-candidate group
(`pytest-dev__pytest-11143`) beside the heuristic's.

Usage: python bench/bench_grader_quality.py [--data DIR] [--mirrors DIR] [--resamples 2000]
       [--nested]
`--mirrors` points at bare or plain clones named owner/name, owner__name, owner+name(/repo) or
name: the base files then come from `git show <base_commit>:<path>`, mirror-backed figures are
printed beside and the timed group is graded again with its base tree on tmpfs. `--nested`
adds the nested leave-one-task-out figure of choosing C and the ordinal/pairwise balance by an
inner leave-one-task-out (slow: about 150 fits per held-out task).
"""

from __future__ import annotations

import argparse
import itertools
import math
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from grading.diffs import parse_patch  # noqa: E402
from grading.grader.analysis.backend import AnalysisBackend  # noqa: E402
from grading.grader.analysis.catalogue import FEATURES, GROUPS  # noqa: E402
from grading.grader.analysis.devset import Task, load  # noqa: E402
from grading.grader.analysis.engine import analyse_group  # noqa: E402
from grading.grader.analysis.fit import (  # noqa: E402
    Prediction,
    Sample,
    fit_model,
    leave_one_task_out,
    predict,
)
from grading.grader.analysis.fit_default import SETTINGS, samples  # noqa: E402
from grading.grader.analysis.model import LinearModel, load_default_fit  # noqa: E402
from grading.grader.heuristic_rules import extract, literals, score_group  # noqa: E402
from grading.grader.inputs import (  # noqa: E402
    CandidateInput,
    GroupInput,
    Rubric,
    TaskInput,
)
from grading.grader.loop import run_grader  # noqa: E402
from review.analysis_fit import ratings  # noqa: E402
from review.stats.gate import (  # noqa: E402
    Ratings,
    agreement_with_ci,
    paired_difference_with_ci,
)
from review.stats.gate_report import random_mean  # noqa: E402
from review.stats.gate_report import smaller_diff as gate_smaller_diff  # noqa: E402
from review.stats.ranking import CONC, PAIRS, pad_groups, ranking_cluster_stats  # noqa: E402

Preds = dict[tuple[str, str], Prediction]
Reader = Callable[[str], str | None]
TIMED_GROUP = "pytest-dev__pytest-11143"
ANALYSIS = "analysis, reference given"
SMALLER = "smaller diff (the issue's)"


def heuristic(tasks: list[Task]) -> Preds:
    out: Preds = {}
    for t in tasks:
        test_text = t.test_patch + "\n" + "\n".join(t.test_names)
        lits = literals(test_text) | {
            p for n in t.test_names for p in re.findall(r"\[([^\]]+)\]", n)
        }
        paths = {n.split("::", 1)[0] for n in t.test_names if n.split("::", 1)[0].endswith(".py")}
        paths |= {f.new_path for f in parse_patch(t.test_patch) if f.new_path}
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
    """The issue's baseline (`review.stats.gate_report`, which the gate prints too)."""
    sizes = {(s.task, s.key): s.size for s in base}
    return {k: Prediction(float(sizes[k]), t, r) for k, (t, r) in gate_smaller_diff(base).items()}


def smaller_diff_fitted(base: list[Sample]) -> Preds:
    """The variant printed before: log size, cuts fitted leave-one-task-out, equal sizes ordered
    by the patch hash unless their changes are identical (no near-tie margin: with one it would
    tie every equal size and be the issue's baseline again)."""
    sized = [Sample(s.task, s.key, {"log_size": math.log1p(s.size)}, s.labels, s.size, s.same)
             for s in base]  # fmt: skip
    return leave_one_task_out(sized, features=["log_size"], margin=0.0, **SETTINGS)


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


def point(base: list[Sample], pred: Preds) -> dict[str, float]:
    g, cons = ratings(base, pred)
    st = agreement_with_ci(g, cons, [s.task for s in base], n_resamples=1, seed=0)
    return {k: ci.estimate for k, ci in st.items() if ci.estimate is not None}


def pairs_by_task(base: list[Sample], analysis: Preds, smaller: Preds, consensus: Ratings) -> None:
    """Where the concordance difference comes from: each task's strictly ordered pairs and how
    many each grader orders as the consensus does (a tie ½), then every pair the analysis grader
    mis-orders, with the held-out model's largest contributions (what to look at next)."""
    tasks = sorted({s.task for s in base})
    cons_key = np.asarray(consensus.key, dtype=float)
    index = {(s.task, s.key): i for i, s in enumerate(base)}

    def members(task: str) -> list[int]:
        return [i for i, s in enumerate(base) if s.task == task]

    def keys(pred: Preds, task: str) -> list[float]:
        preds = [pred[(task, base[i].key)] for i in members(task)]
        return [p.tier * 1000.0 + p.rank_in_tier for p in preds]

    stats = {
        name: ranking_cluster_stats(
            pad_groups([[cons_key[i] for i in members(t)] for t in tasks]),
            pad_groups([keys(pred, t) for t in tasks]),
        )
        for name, pred in (("analysis", analysis), ("smaller", smaller))
    }
    print("\n## Pairs by task (vs consensus): strictly ordered pairs, concordant for each grader")
    print("| task | pairs | analysis | smaller diff |\n|---|---|---|---|")
    for j, t in enumerate(tasks):
        a, d = stats["analysis"][j, CONC], stats["smaller"][j, CONC]
        mark = " (analysis worse)" if a < d else ""
        print(f"| {t} | {stats['analysis'][j, PAIRS]:.0f} | {a:g} | {d:g}{mark} |")
    print("\nPairs the analysis grader mis-orders or ties (held-out model; consensus tier·1000 +")
    print("mean rank, the grader's tier and rank, changed lines, largest contributions):")
    for t in tasks:
        model = fit_model([s for s in base if s.task != t], **SETTINGS)
        group = [base[i] for i in members(t)]
        for a, b in itertools.combinations(group, 2):
            ka, kb = cons_key[index[(t, a.key)]], cons_key[index[(t, b.key)]]
            if ka == kb:
                continue
            good, bad = (a, b) if ka < kb else (b, a)
            pg, pb = analysis[(t, good.key)], analysis[(t, bad.key)]
            if (pg.tier, pg.rank_in_tier) < (pb.tier, pb.rank_in_tier):
                continue
            tied = (pg.tier, pg.rank_in_tier) == (pb.tier, pb.rank_in_tier)
            verb = "tied with" if tied else "should beat"
            print(f"  {t}: {_pair_side(good, pg, model, ka if good is a else kb)}")
            print(f"    {verb} {_pair_side(bad, pb, model, kb if good is a else ka)}")


def _pair_side(s: Sample, p: Prediction, model: LinearModel, key: float) -> str:
    contrib = sorted(((model.contribution(f, v), f) for f, v in s.values.items()), reverse=True)
    top = ", ".join(f"{f} {c:.2f}" for c, f in contrib[:3] if c > 0.005) or "none"
    return f"{s.key[:8]} (consensus {key:.0f}, T{p.tier} #{p.rank_in_tier}, {s.size} lines: {top})"


# Nested cross-validation --------------------------------------------------------------------

GRID = [{"c": c, "pair_share": p} for c, p in itertools.product((0.3, 1.0, 3.0), (0.25, 0.5, 0.75))]


def nested(base: list[Sample]) -> tuple[Preds, list[dict[str, float]]]:
    """Each task held out; C and pair_share chosen by leave-one-task-out on the other tasks
    (κ + pairwise concordance against their consensus), then refitted on them."""
    out: Preds = {}
    chosen = []
    for held in sorted({s.task for s in base}):
        train = [s for s in base if s.task != held]

        def inner(g: dict[str, float], train: list[Sample] = train) -> float:
            st = point(train, leave_one_task_out(train, **{**SETTINGS, **g}))
            return st["kappa"] + st["concordance"]

        best = max(GRID, key=inner)
        chosen.append(best)
        model = fit_model(train, **{**SETTINGS, **best})
        for key, p in predict(model, [s for s in base if s.task == held]).items():
            out[(held, key)] = p
    return out, chosen


# Mirrors ------------------------------------------------------------------------------------


def mirror_dir(mirrors: Path, repo_name: str) -> Path | None:
    owner, _, name = repo_name.partition("/")
    candidates = (mirrors / owner / name, mirrors / f"{owner}__{name}",
                  mirrors / f"{owner}+{name}" / "repo", mirrors / f"{owner}+{name}",
                  mirrors / name)  # fmt: skip
    for repo in candidates:
        if repo.exists():
            return repo / ".git" if (repo / ".git").exists() else repo
    return None


def has_commit(git_dir: Path, commit: str) -> bool:
    cmd = ["git", "--git-dir", str(git_dir), "cat-file", "-e", f"{commit}^{{commit}}"]
    return subprocess.run(cmd, capture_output=True, check=False).returncode == 0


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


def tree_reader(root: Path) -> Reader:
    """Files of a checked-out base tree (no cache: every read is a file read)."""

    def read(path: str) -> str | None:
        file = root / path
        return file.read_text(encoding="utf-8", errors="replace") if file.is_file() else None

    return read


def mirror_readers(mirrors: Path, tasks: list[Task]) -> dict[str, Reader]:
    out: dict[str, Reader] = {}
    for t in tasks:
        git_dir = mirror_dir(mirrors, t.repo)
        if git_dir is not None and has_commit(git_dir, t.base_commit):
            out[t.instance_id] = _GitReader(git_dir, t.base_commit)
    return out


# Report -------------------------------------------------------------------------------------


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument(
        "--data", type=Path, default=ROOT.parent / "shared" / "data" / "swebench-groups"
    )
    ap.add_argument("--mirrors", type=Path)
    ap.add_argument("--resamples", type=int, default=2000)
    ap.add_argument("--nested", action="store_true")
    args = ap.parse_args()
    tasks = load(args.data)
    t0 = time.perf_counter()
    with_ref = samples(tasks, reference=True)
    no_ref = samples(tasks, reference=False)
    print(f"{len(tasks)} tasks, {len(with_ref)} candidates; features measured in "
          f"{time.perf_counter() - t0:.1f} s; fit settings {SETTINGS}")  # fmt: skip
    task_ids = [s.task for s in with_ref]
    graders: dict[str, Preds] = {
        ANALYSIS: leave_one_task_out(with_ref, **SETTINGS),
        "analysis, reference withheld": leave_one_task_out(no_ref, **SETTINGS),
        "heuristic (the previous default)": heuristic(tasks),
        SMALLER: smaller_diff(with_ref),
        "smaller diff, fitted cuts (earlier variant)": smaller_diff_fitted(with_ref),
    }
    if args.mirrors:
        readers = mirror_readers(args.mirrors, tasks)
        print(f"mirrors with the base commit for {len(readers)} of {len(tasks)} tasks: "
              f"{', '.join(sorted(readers))}")  # fmt: skip
        if readers:
            mirrored = samples(tasks, reference=True, readers=readers)
            label = f"analysis + mirrors ({len(readers)} of {len(tasks)} tasks)"
            graders[label] = leave_one_task_out(mirrored, **SETTINGS)
    if args.nested:
        t1 = time.perf_counter()
        graders["analysis, nested CV of C × pair_share"], chosen = nested(with_ref)
        picks = sorted({(g["c"], g["pair_share"]) for g in chosen})
        print(f"nested CV chose (C, pair_share) among {picks} in "
              f"{time.perf_counter() - t1:.0f} s")  # fmt: skip
    refs = {
        "consensus": ratings(with_ref, graders[SMALLER])[1],
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
    nested_name = next((g for g in graders if g.startswith("analysis, nested")), None)
    for grader in (ANALYSIS, *([nested_name] if nested_name else [])):
        for baseline in (SMALLER, "smaller diff, fitted cuts (earlier variant)"):
            diff = paired_difference_with_ci(as_ratings[grader], as_ratings[baseline],
                                             refs["consensus"], task_ids, n_resamples=n,
                                             seed=2)  # fmt: skip
            for stat, ci in diff.items():
                verdict = "real gain" if ci.low is not None and ci.low > 0 else "not shown"
                who = "" if grader == ANALYSIS else f"{grader}, "
                print(f"  {who}vs {baseline}: {stat} {fmt(ci, 3)}  ({verdict})")
    pairs_by_task(with_ref, graders[ANALYSIS], graders[SMALLER], refs["consensus"])

    print("\n## Ablation (held out, vs consensus): each part removed and refitted; Δ = all minus")
    print("   the variant, paired task bootstrap")
    print(
        "| model | kappa | concordance | T3 recall | exact | Δ kappa | Δ concordance | Δ T3 rec. |"
    )
    print("|---|---|---|---|---|---|---|---|")
    variants: list[tuple[str, dict[str, object]]] = [("all (shipped settings)", {})]
    variants += [
        (f"without {g} features", {"features": [f.name for f in FEATURES if f.group != g]})
        for g in GROUPS
    ]
    variants += [
        ("noise and style may reach T3 (no T2 cap)", {"cap_style": False}),
        ("weights shrunk to zero, not to their kind", {"group_scale": 0.0}),
        ("neither (cap nor kinds)", {"cap_style": False, "group_scale": 0.0}),
    ]  # fmt: skip
    for label, change in variants:
        pred = leave_one_task_out(with_ref, **{**SETTINGS, **change})
        fig = point(with_ref, pred)
        delta = paired_difference_with_ci(
            as_ratings[ANALYSIS], ratings(with_ref, pred)[0], refs["consensus"], task_ids,
            statistics=("kappa", "concordance", "t3_recall"), n_resamples=n, seed=3,
        )  # fmt: skip
        print(f"| {label} | {fig['kappa']:.3f} | {fig['concordance']:.3f} | "
              f"{fig['t3_recall']:.2f} | {fig['exact']:.2f} | "
              + " | ".join(fmt(delta[k], 3) if change else "—"
                           for k in ("kappa", "concordance", "t3_recall"))
              + " |")  # fmt: skip

    fit = load_default_fit()
    print(f"\n## Shipped fit {fit.version}: weights (reference mode), cuts {fit.reference.cuts}")
    print("  " + ", ".join(f"{k}={v:.2f}" for k, v in fit.reference.weights.items() if v))
    print(f"\n## The analysis grader through the agent loop\n  {loop_agreement(tasks)}")
    _timing(args.data, args.mirrors)
    return 0


def loop_group(task: Task) -> GroupInput:
    """The task as the agent loop gets it from the service (no repository)."""
    names = tuple(task.test_names)
    return GroupInput(
        TaskInput(task.problem_statement, None, task.base_commit, fail_to_pass=names,
                  test_patch=task.test_patch, reference_patch=task.reference_patch,
                  repo=task.repo, source_note="no source: benchmark"),
        [CandidateInput(sha, text, True) for sha, text in sorted(task.patches.items())],
    )  # fmt: skip


def loop_agreement(tasks: list[Task]) -> str:
    """Whether the AnalysisBackend, driven by the agent loop through its tools and the verdict
    protocol, gives the engine's own tiers and ranks (shipped fit, reference given; tied
    candidates may be listed in either order)."""
    fit = load_default_fit()
    same = 0
    for t in tasks:
        direct = analyse_group(t.analysis_input(), fit)
        out = run_grader(loop_group(t), AnalysisBackend(fit), seed=0)
        v = out.verdict or {}
        got = {k: (c["tier"], c["rank_in_tier"]) for k, c in v.get("candidates", {}).items()}
        want = {k: (r.tier, r.rank_in_tier) for k, r in direct.candidates.items()}
        same += out.status == "ok" and got == want
    return f"{same} of {len(tasks)} groups: the same tiers and ranks as the engine called directly"


def _median_time(fn: Callable[[], object], runs: int = 5) -> float:
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def _timing(data: Path, mirrors: Path | None) -> None:
    task = next(t for t in load(data, reviewed_only=False) if t.instance_id == TIMED_GROUP)
    fit = load_default_fit()
    group = loop_group(task)
    times = {
        "heuristic rules": _median_time(lambda: heuristic([task])),
        "analysis grader, patches only": _median_time(
            lambda: analyse_group(task.analysis_input(), fit)
        ),
        "analysis grader through the agent loop, patches only": _median_time(
            lambda: run_grader(group, AnalysisBackend(fit), seed=0)
        ),
    }
    git_dir = mirror_dir(mirrors, task.repo) if mirrors else None
    if git_dir is not None and has_commit(git_dir, task.base_commit):
        shm = Path("/dev/shm") if Path("/dev/shm").is_dir() else None
        root = Path(tempfile.mkdtemp(prefix="gagar-bench-", dir=shm))
        try:
            archive = subprocess.run(
                ["git", "--git-dir", str(git_dir), "archive", task.base_commit],
                capture_output=True, check=True,
            ).stdout  # fmt: skip
            subprocess.run(["tar", "-x", "-C", str(root)], input=archive, check=True)
            read = tree_reader(root)
            label = f"analysis grader, base tree on {'tmpfs' if shm else 'disk'}"
            times[label] = _median_time(
                lambda: analyse_group(task.analysis_input(read_base=read), fit)
            )
        finally:
            shutil.rmtree(root, ignore_errors=True)
    print(f"\n## Time to grade {TIMED_GROUP} ({len(task.patches)} distinct candidates, "
          "median of 5)")  # fmt: skip
    if not any(name.startswith("analysis grader, base tree") for name in times):
        print(f"  no repository mirror of {task.repo} at {task.base_commit[:12]} "
              f"({'none given' if mirrors is None else f'not in {mirrors}'}): figures from the "
              "patches alone; --mirrors DIR adds the base tree on tmpfs")  # fmt: skip
    for name, sec in times.items():
        ratio = sec / times["heuristic rules"]
        print(f"  {name}: {sec * 1000:.0f} ms ({ratio:.1f}x the heuristic rules; target <= 3 s)")


if __name__ == "__main__":
    sys.exit(main())
