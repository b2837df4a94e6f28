"""Candidate features and feature-set changes for the analysis grader, measured held out.

The evidence behind the README's "tried and not kept" rows for issue 13's open target (the
paired task-bootstrap lower bound of concordance minus "smaller diff"'s). Each variant is the
shipped feature set with features added or removed, refitted leave-one-task-out with the
shipped settings on the 16 reviewed groups (reference given, patches only), and compared with
the shipped set and with "smaller diff" by the paired task bootstrap. The added features are
measured here, outside the catalogue (none is shipped), with the engine's own views and AST:

* `new_branches`: `if`/`elif`/conditional expressions the candidate's core Python changes add
  (added lines minus removed lines, so a re-indented or rewritten `if` is not new) beyond the
  reference's own (without a reference: the median of the other candidates'), log(1 + n);
* `new_type_checks`: the same for `isinstance`/`issubclass` calls;
* `helper_missed`: share of the functions the reference newly calls (called on its added lines,
  not on its removed ones) that the candidate never calls on its added lines;
* `narrating_text` / comments only: the shipped `narrating_comments` split into narrating
  comments and narrating help or message strings (the two regular expressions of `features`);
* `edit_excess`: characters rewritten inside the changed blocks of the core files (difflib over
  each run of removed and added lines, stripped) beyond the reference's, log(1 + n): a line
  rewritten where a word would do (a minimality concern, capped at T2).
* `size_over_smallest`: changed core lines beyond the group's smallest other candidate,
  log(1 + n): minimality against the peers beside it (T2 at most);
* `caller_fix` / `uncovered_not_caller`: `target_uncovered` split in two: the share of the
  reference's functions the candidate leaves untouched but calls from its changed code (named,
  for an anonymous region, by the `def` of the reference's own hunk header), T2 at most, and the
  rest, as severe as `target_uncovered`.

Two more rows use the reviewers' rubric scores (the five 1-5 criteria of `reviews/`) as extra
pairwise training rows, the feature set unchanged: "rubric breaks label ties" adds, for every pair
a reviewer gave the same tier and rank, the one with the higher rubric sum as the better; "rubric
orders" adds every pair the rubric sum orders and the label does not order the other way. Each
row weighs as one of the reviewer's ordered pairs (`_design`'s pairwise weight).

`--nested` chooses among the variants for each held-out task by an inner leave-one-task-out on
the other 15 (κ + concordance, as `bench_grader_quality --nested` chooses C and the balance) and
prints how often each is chosen and the nested figures.

Usage: python bench/bench_grader_variants.py [--data DIR] [--resamples 2000] [--nested]
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import math
import re
import statistics
import sys
from collections import Counter
from collections.abc import Iterator
from difflib import SequenceMatcher
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from grading.diffs import Patch  # noqa: E402
from grading.domain.reviews_file import read_reviews  # noqa: E402
from grading.grader.analysis import features as feature_code  # noqa: E402
from grading.grader.analysis import fit as fit_code  # noqa: E402
from grading.grader.analysis import pyfacts  # noqa: E402
from grading.grader.analysis.catalogue import BY_NAME, NAMES, FeatureSpec  # noqa: E402
from grading.grader.analysis.devset import Task, load  # noqa: E402
from grading.grader.analysis.engine import observe  # noqa: E402
from grading.grader.analysis.fit import (  # noqa: E402
    Prediction,
    Sample,
    fit_model,
    leave_one_task_out,
    predict,
)
from grading.grader.analysis.fit_default import SETTINGS, samples  # noqa: E402
from grading.grader.analysis.group import GroupContext  # noqa: E402
from grading.grader.analysis.locality import _leaf, _overlaps, callees, footprint  # noqa: E402
from review.analysis_fit import ratings  # noqa: E402
from review.stats.gate import agreement_with_ci, paired_difference_with_ci  # noqa: E402
from review.stats.gate_report import smaller_diff  # noqa: E402

Preds = dict[tuple[str, str], Prediction]
EXTRA = {  # name -> (kind it is shrunk towards, max tier)
    "new_branches": ("locality", 3),
    "new_type_checks": ("locality", 3),
    "helper_missed": ("locality", 3),
    "narrating_text": ("noise", 2),
    "narrating_only_comments": ("noise", 2),
    "edit_excess": ("locality", 2),
    "size_over_smallest": ("locality", 2),
    "uncovered_not_caller": ("locality", 3),
    "caller_fix": ("locality", 2),
}


def _core_nodes(ctx: GroupContext, patch: Patch) -> Iterator[tuple[int, ast.AST]]:
    """(+1 for an added line's node, -1 for a removed line's) over the core Python files."""
    for fp in patch.files:
        if not ctx.is_core(fp) or not fp.path.endswith(".py"):
            continue
        sides = []
        if not fp.is_deleted:
            sides.append((1, ctx.post_syn(fp), set(fp.added)))
        pre = ctx.base_syn(fp.old_path) if fp.old_path else None
        if pre is not None:
            sides.append((-1, pre, set(fp.removed)))
        for sign, syn, lines in sides:
            for _, node, _ in pyfacts._nodes(syn, lines):
                yield sign, node


def _called(node: ast.AST) -> str | None:
    if not isinstance(node, ast.Call):
        return None
    f = node.func
    return f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else None


def _counts(ctx: GroupContext, patch: Patch) -> Counter[str]:
    c: Counter[str] = Counter()
    for sign, node in _core_nodes(ctx, patch):
        if isinstance(node, ast.If | ast.IfExp):
            c["new_branches"] += sign
        if _called(node) in ("isinstance", "issubclass"):
            c["new_type_checks"] += sign
    return c


def _calls(ctx: GroupContext, patch: Patch, sign: int) -> set[str]:
    return {n for s, node in _core_nodes(ctx, patch) if s == sign and (n := _called(node))}


def _narrating(ctx: GroupContext, patch: Patch) -> tuple[int, int]:
    """(narrating comments, narrating strings), as `features._words` counts them together."""
    comments = texts = 0
    for fp in patch.files:
        if not ctx.is_core(fp) or not fp.path.endswith(".py") or fp.is_deleted:
            continue
        near, added, removed = ctx.post_near(fp), set(fp.added), " ".join(fp.removed.values())
        comments += sum(bool(feature_code._NARRATING.search(t))
                        for _, t in pyfacts.comments(near, added))  # fmt: skip
        for _, text in pyfacts.string_constants(near, added):
            said = feature_code._NARRATING_TEXT.search(text)
            if said and not re.search(rf"\b{re.escape(said.group(0))}\b", removed, re.I):
                texts += 1
    return comments, texts


def _rewritten(ctx: GroupContext, patch: Patch) -> int:
    """Characters inserted or deleted within each run of removed and added core lines."""
    total = 0
    for fp in patch.files:
        if not ctx.is_core(fp):
            continue
        for hunk in fp.hunks:
            runs: list[tuple[list[str], list[str]]] = [([], [])]
            for ln in hunk.lines:
                if ln.kind in "-+":
                    runs[-1][ln.kind == "+"].append(ln.content.strip())
                elif runs[-1] != ([], []):
                    runs.append(([], []))
            for removed, added in runs:
                ops = SequenceMatcher(None, "\n".join(removed), "\n".join(added), autojunk=False)
                total += sum(max(i2 - i1, j2 - j1) for op, i1, i2, j1, j2 in ops.get_opcodes()
                             if op != "equal")  # fmt: skip
    return total


_DEF_SECTION = re.compile(r"^\s*(?:async\s+)?def\s+([A-Za-z_]\w*)")


def _target_names(ctx: GroupContext, place: tuple[str, str]) -> set[str]:
    """The function a reference place is in: its scope's leaf, or for an anonymous region
    (`@277`, no repository) the `def` git names in the reference's hunk headers there."""
    leaf = _leaf(place[1])
    if leaf:
        return {leaf}
    ref = ctx.reference
    assert ref is not None
    region = int(place[1].lstrip("@").split(".")[0]) if place[1].startswith("@") else None
    names = set()
    for fp in ref.files:
        if (fp.old_path or fp.path) != place[0]:
            continue
        for hunk in fp.hunks:
            m = _DEF_SECTION.match(hunk.section or "")
            if m and (region is None or hunk.old_start <= region + 3):
                names.add(m.group(1))
    return names


def _caller(ctx: GroupContext, patch: Patch) -> dict[str, float]:
    """`target_uncovered` without the reference targets the candidate's changed functions
    call (a fix in the caller: one layer up, symptom-level), and the share of those."""
    if ctx.reference is None:
        return {"uncovered_not_caller": 0.0, "caller_fix": 0.0}
    ref, mine = footprint(ctx, ctx.reference), footprint(ctx, patch)
    targets = list(ref.places)
    if not targets:
        return {"uncovered_not_caller": 0.0, "caller_fix": 0.0}
    unc = [t for t in targets if not any(_overlaps(p, t) for p in mine.places)]
    unc = [t for t in unc if not callees(ctx, t).covers(t, mine.places)]
    calls = set().union(*(callees(ctx, p).calls for p in mine.places)) if mine.places else set()
    callers = [t for t in unc if _target_names(ctx, t) & calls]
    return {"uncovered_not_caller": (len(unc) - len(callers)) / len(targets),
            "caller_fix": len(callers) / len(targets)}  # fmt: skip


def _size(ctx: GroupContext, patch: Patch) -> int:
    """Changed core lines (the footprint's size: re-indented and comment-only lines left out)."""
    return footprint(ctx, patch).size


def extra_values(task: Task) -> dict[str, dict[str, float]]:
    """key -> the extra features' values, reference given."""
    _, ctx, _ = observe(task.analysis_input())
    counts = {k: _counts(ctx, p) for k, p in ctx.patches.items()}
    ref = ctx.reference
    ref_counts = _counts(ctx, ref) if ref is not None else None
    new_calls = _calls(ctx, ref, 1) - _calls(ctx, ref, -1) if ref is not None else set()
    out = {}
    for key, patch in ctx.patches.items():
        values: dict[str, float] = {}
        for name in ("new_branches", "new_type_checks"):
            if ref_counts is not None:
                base = float(max(0, ref_counts[name]))
            else:
                base = statistics.median(max(0, c[name]) for k, c in counts.items() if k != key)
            values[name] = math.log1p(max(0.0, max(0, counts[key][name]) - base))
        missed = new_calls - _calls(ctx, patch, 1)
        values["helper_missed"] = len(missed) / len(new_calls) if new_calls else 0.0
        comments, texts = _narrating(ctx, patch)
        values["narrating_only_comments"] = math.log1p(comments)
        values["narrating_text"] = math.log1p(texts)
        excess: float
        if ref is not None:
            excess = _rewritten(ctx, patch) - _rewritten(ctx, ref)
        else:
            excess = _rewritten(ctx, patch) - statistics.median(
                _rewritten(ctx, p) for k, p in ctx.patches.items() if k != key
            )
        values["edit_excess"] = math.log1p(max(0.0, excess))
        out[key] = values
    for key, patch in ctx.patches.items():
        out[key].update(_caller(ctx, patch))
    sizes = {key: _size(ctx, patch) for key, patch in ctx.patches.items()}
    for key, values in out.items():
        others = [n for k, n in sizes.items() if k != key]
        beyond = sizes[key] - min(others) if others else 0
        values["size_over_smallest"] = math.log1p(max(0, beyond))
    return out


@contextlib.contextmanager
def extra_kinds() -> Iterator[None]:
    """Let the fit shrink the extra features towards their kind and cap noise at T2, as the
    catalogue's own features are; restored afterwards."""
    # `fit` reads the catalogue's T2 cap through its own import: patched there, for this run.
    saved = fit_code.T2_AT_MOST  # type: ignore[attr-defined]
    for name, (group, max_tier) in EXTRA.items():
        BY_NAME[name] = FeatureSpec(name, group, "other", "approach_suitability", name,
                                    max_tier=max_tier)  # fmt: skip
    fit_code.T2_AT_MOST = saved | {n for n, (_, t) in EXTRA.items() if t < 3}  # type: ignore[attr-defined]
    try:
        yield
    finally:
        fit_code.T2_AT_MOST = saved  # type: ignore[attr-defined]
        for name in EXTRA:
            BY_NAME.pop(name, None)


Rubric = dict[tuple[str, str, str], int]  # (rater, task, patch sha) -> sum of the 5 scores


def rubric_sums(data: Path) -> Rubric:
    out: Rubric = {}
    for path in sorted((data / "reviews").glob("rater-*.jsonl")):
        reviews, problems = read_reviews(path)
        if problems:
            raise SystemExit(f"{path}: {problems[0]}")
        for review in reviews:
            for c in review.candidates:
                out[(path.stem, review.instance_id, c.patch_sha256)] = sum(c.scores.values())
    return out


def _rubric_pairs(samples: list[Sample], sums: Rubric, mode: str) -> list[tuple[int, int]]:
    """(better, worse) indices within a task from one reviewer's rubric sums (`mode` above)."""
    by_task: dict[str, list[int]] = {}
    for i, s in enumerate(samples):
        by_task.setdefault(s.task, []).append(i)
    out = []
    for task, members in by_task.items():
        for a in members:
            for b in members:
                for rater, la in samples[a].labels.items():
                    lb = samples[b].labels.get(rater)
                    if (
                        lb is None
                        or sums[(rater, task, samples[a].key)]
                        <= sums[(rater, task, samples[b].key)]
                    ):
                        continue
                    if la == lb or (mode == "orders" and not la > lb):
                        out.append((a, b))
    return out


@contextlib.contextmanager
def rubric_rows(sums: Rubric, mode: str) -> Iterator[None]:
    """The fit's design with the rubric's pairs appended, for this block (restored after)."""
    design = fit_code._design

    def with_rubric(samples, features, pair_share, t2):  # type: ignore[no-untyped-def]
        z, y, w = design(samples, features, pair_share, t2)
        pairs = _rubric_pairs(list(samples), sums, mode)
        if not pairs:
            return z, y, w
        x = [[s.values.get(f, 0.0) for f in features] for s in samples]
        rows = [[xb - xa for xa, xb in zip(x[a], x[b], strict=True)] + [0.0, 0.0]
                for a, b in pairs]  # fmt: skip
        pair_weight = float(w[-1])  # the design's last row is a reviewer's ordered pair
        return (np.vstack([z, rows]), np.concatenate([y, [1.0] * len(pairs)]),
                np.concatenate([w, [pair_weight] * len(pairs)]))  # fmt: skip

    fit_code._design = with_rubric  # type: ignore[attr-defined]
    try:
        yield
    finally:
        fit_code._design = design  # type: ignore[attr-defined]


def variants() -> dict[str, list[str]]:
    shipped = list(NAMES)
    without = [f for f in shipped if f != "narrating_comments"]
    return {
        "shipped": shipped,
        "+ new_branches": [*shipped, "new_branches"],
        "+ new_type_checks": [*shipped, "new_type_checks"],
        "+ both": [*shipped, "new_branches", "new_type_checks"],
        "+ helper_missed": [*shipped, "helper_missed"],
        "- off_target": [f for f in shipped if f != "off_target"],
        "- narrating_comments": without,
        "- off_target - narrating_comments": [f for f in without if f != "off_target"],
        "narrating split: comments, strings": [*without, "narrating_only_comments",
                                               "narrating_text"],
        "narrating strings only (comments dropped)": [*without, "narrating_text"],
        "+ edit_excess": [*shipped, "edit_excess"],
        "+ size_over_smallest": [*shipped, "size_over_smallest"],
        "caller-level fixes split from target_uncovered": [
            *(f for f in shipped if f != "target_uncovered"), "uncovered_not_caller", "caller_fix"],
    }  # fmt: skip


def point(base: list[Sample], pred: Preds) -> dict[str, float]:
    g, cons = ratings(base, pred)
    st = agreement_with_ci(g, cons, [s.task for s in base], n_resamples=1, seed=0)
    return {k: ci.estimate for k, ci in st.items() if ci.estimate is not None}


def nested(base: list[Sample], sets: dict[str, list[str]]) -> tuple[Preds, Counter[str]]:
    out: Preds = {}
    chosen: Counter[str] = Counter()
    for held in sorted({s.task for s in base}):
        train = [s for s in base if s.task != held]

        def inner(name: str, train: list[Sample] = train) -> float:
            pred = leave_one_task_out(train, **{**SETTINGS, "features": sets[name]})
            st = point(train, pred)
            return st["kappa"] + st["concordance"]

        best = max(sets, key=inner)
        chosen[best] += 1
        model = fit_model(train, **{**SETTINGS, "features": sets[best]})
        for key, p in predict(model, [s for s in base if s.task == held]).items():
            out[(held, key)] = p
    return out, chosen


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument(
        "--data", type=Path, default=ROOT.parent / "shared" / "data" / "swebench-groups"
    )
    ap.add_argument("--resamples", type=int, default=2000)
    ap.add_argument("--nested", action="store_true")
    args = ap.parse_args()
    tasks = load(args.data)
    extra = {(t.instance_id, k): v for t in tasks for k, v in extra_values(t).items()}
    base = [Sample(s.task, s.key, {**s.values, **extra[(s.task, s.key)]}, s.labels, s.size,
                   s.same) for s in samples(tasks, reference=True)]  # fmt: skip
    ids = [s.task for s in base]
    sizes = {(s.task, s.key): s.size for s in base}
    smaller = {k: Prediction(float(sizes[k]), t, r) for k, (t, r) in smaller_diff(base).items()}
    small_r, cons = ratings(base, smaller)
    for name in EXTRA:
        fired = sum(1 for s in base if s.values[name] > 0)
        print(f"{name}: non-zero for {fired} of {len(base)} candidates")
    n = args.resamples
    print(f"\n## Held out (leave-one-task-out, reference given), {n} paired task resamples")
    print("| variant | κ | concordance | T3 recall | exact | κ − shipped | concordance − shipped "
          "| concordance − smaller diff |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|")
    sets = variants()
    with extra_kinds():
        preds = {name: leave_one_task_out(base, **{**SETTINGS, "features": f})
                 for name, f in sets.items()}  # fmt: skip
        shipped = ratings(base, preds["shipped"])[0]
        sums = rubric_sums(args.data)
        for mode, label in (("ties", "rubric breaks label ties"), ("orders", "rubric orders")):
            print(f"{label}: {len(_rubric_pairs(base, sums, mode))} extra pairwise rows")
            with rubric_rows(sums, mode):
                preds[label] = leave_one_task_out(base, **SETTINGS)
        for name, pred in preds.items():
            fig = point(base, pred)
            mine = ratings(base, pred)[0]
            vs = paired_difference_with_ci(mine, shipped, cons, ids, n_resamples=n, seed=3)
            vd = paired_difference_with_ci(mine, small_r, cons, ids, n_resamples=n, seed=2)
            print(f"| {name} | {fig['kappa']:.3f} | {fig['concordance']:.3f} | "
                  f"{fig['t3_recall']:.2f} | {fig['exact']:.2f} | {_ci(vs['kappa'])} | "
                  f"{_ci(vs['concordance'])} | {_ci(vd['concordance'])} |")  # fmt: skip
        if args.nested:
            pred, chosen = nested(base, sets)
            fig = point(base, pred)
            vd = paired_difference_with_ci(ratings(base, pred)[0], small_r, cons, ids,
                                           n_resamples=n, seed=2)  # fmt: skip
            print(f"\nnested choice among the variants: {dict(chosen.most_common())}")
            print(f"nested: κ {fig['kappa']:.3f}, concordance {fig['concordance']:.3f}, "
                  f"T3 recall {fig['t3_recall']:.2f}; concordance − smaller diff "
                  f"{_ci(vd['concordance'])}, κ − smaller diff {_ci(vd['kappa'])}")  # fmt: skip
    return 0


def _ci(ci) -> str:  # type: ignore[no-untyped-def]
    return f"{ci.estimate:+.3f} [{ci.low:+.3f}, {ci.high:+.3f}]"


if __name__ == "__main__":
    sys.exit(main())
