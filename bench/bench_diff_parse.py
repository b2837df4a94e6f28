"""Benchmark: the project's diff parser (`grading.diffs.parse_patch`) against unidiff.

Both read the same texts: every patch of the shared SWE-bench groups (278 candidates, 27 gold and
27 test patches, used in place) and a paper-scale synthetic group (16 candidates, 7-31 KB). The
best of several runs of each is printed with the ratio ours/unidiff (below 1 is faster); the
parser replaced unidiff in the import path, the grader's tools and the analysis grader.

Run: .venv/bin/python bench/bench_diff_parse.py
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable
from pathlib import Path

import unidiff

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from grading.diffs import parse_patch  # noqa: E402
from tests.grader.fakes.paper_group import paper_group  # noqa: E402

GROUPS = ROOT / ".." / "shared" / "data" / "swebench-groups" / "groups.jsonl"
RUNS = 7


def _real() -> list[str]:
    if not GROUPS.exists():
        return []
    out = []
    for line in GROUPS.read_text(encoding="utf-8").splitlines():
        g = json.loads(line)
        out += [c["patch"] for c in g["candidates"]] + [g["gold_patch"], g["test_patch"]]
    return out


def _best(fn: Callable[[str], object], texts: list[str]) -> float:
    times = []
    for _ in range(RUNS):
        start = time.perf_counter()
        for t in texts:
            fn(t)
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    sets = {"SWE-bench groups": _real(), "paper-scale group": [
        c.patch for c in paper_group(seed=0).candidates
    ]}  # fmt: skip
    print(f"{'patches':<20} {'n':>4} {'KB':>7} {'unidiff ms':>11} {'ours ms':>9} {'ratio':>6}")
    for name, texts in sets.items():
        if not texts:
            print(f"{name:<20} (not available)")
            continue
        theirs = _best(unidiff.PatchSet, texts)
        ours = _best(parse_patch, texts)
        kb = sum(len(t) for t in texts) / 1024
        print(
            f"{name:<20} {len(texts):>4} {kb:>7.0f} {theirs * 1e3:>11.1f} {ours * 1e3:>9.1f} "
            f"{ours / theirs:>6.2f}"
        )


if __name__ == "__main__":
    main()
