"""Benchmark: render_patch against Pygments alone on the same lines (and diff2html if present).

A synthetic 16-candidate group edits real Python modules from the standard library (so the
code is realistic) until the group has about 5,000 changed lines. We time
  (a) Pygments alone (`highlight` with HtmlFormatter) on exactly the hunk lines, old side and
      new side of every file, and
  (b) `render_patch` from a cold start (lexer and class caches cleared) for all 16 candidates,
and print both and the ratio (target <= 2x). If `diff2html-cli` is installed under /tmp/d2h
(`npm install --prefix /tmp/d2h diff2html-cli`), its side-by-side render is timed as well.

Run: .venv/bin/python bench/bench_diff_render.py
"""

from __future__ import annotations

import difflib
import random
import shutil
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import unidiff
from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexers import PythonLexer

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from review.diffs import highlight as hl
from review.diffs import render_patch

CANDIDATES = 16
CHANGED_LINES = 5_000
RUNS = 5
D2H = Path("/tmp/d2h/node_modules/.bin/diff2html")
MODULES = [
    "argparse.py", "ast.py", "calendar.py", "configparser.py", "csv.py", "dataclasses.py",
    "difflib.py", "enum.py", "fractions.py", "functools.py", "inspect.py", "pathlib.py",
    "pprint.py", "shutil.py", "string.py", "textwrap.py", "typing.py", "zipfile/__init__.py",
]  # fmt: skip


def _edit(lines: list[str], rng: random.Random) -> int:
    """One plausible edit; returns how many changed lines (added + removed) it makes."""
    i = rng.randrange(5, len(lines) - 5)
    kind = rng.random()
    if kind < 0.5:  # tweak a line in place
        line = lines[i]
        tweaked = line.rstrip("\n") + "  # checked\n"
        lines[i] = line.replace("self", "this", 1) if "self" in line else tweaked
        return 2
    if kind < 0.8:  # insert a few lines copied from nearby, with a guard
        text = lines[i].rstrip("\n")
        indent = text[: len(text) - len(text.lstrip())]
        new = [f"{indent}if value is None:\n", f"{indent}    raise ValueError('value')\n"]
        lines[i:i] = new
        return len(new)
    del lines[i : i + 2]  # delete two lines
    return 2


def module_text(name: str) -> str:
    """A standard library module's source (3.13 moved pathlib.py's code to pathlib/_local.py)."""
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    path = stdlib / name
    if not path.exists():
        path = stdlib / name.removesuffix(".py") / "_local.py"
    return path.read_text(encoding="utf-8").rstrip("\n")


def build_group(seed: int = 7) -> list[str]:
    rng = random.Random(seed)
    # Split on "\n" only: str.splitlines would also split on form feeds inside the modules.
    sources = {m: [f"{ln}\n" for ln in module_text(m).split("\n")] for m in MODULES}
    per_candidate = CHANGED_LINES // CANDIDATES
    patches = []
    for _ in range(CANDIDATES):
        parts: list[str] = []
        budget = per_candidate
        for name in rng.sample(MODULES, 3):
            old = sources[name]
            new = list(old)
            share = budget if len(parts) == 2 else budget // (3 - len(parts))
            made = 0
            while made < share:
                made += _edit(new, rng)
            budget -= made
            body = "".join(difflib.unified_diff(old, new, f"a/lib/{name}", f"b/lib/{name}"))
            parts.append(f"diff --git a/lib/{name} b/lib/{name}\n{body}")
        patches.append("".join(parts))
    return patches


def sides(patch: str) -> list[tuple[str, str]]:
    """Old-side and new-side hunk text per file, read with unidiff (not our parser)."""
    out = []
    for f in unidiff.PatchSet(patch):
        old = [ln.value for h in f for ln in h if not ln.is_added]
        new = [ln.value for h in f for ln in h if not ln.is_removed]
        out.append(("".join(old), "".join(new)))
    return out


def whole_files(patch: str) -> list[tuple[str, str]]:
    """Each file's whole old and new text (the modules, patched with unidiff, not our code)."""
    out = []
    for f in unidiff.PatchSet(patch):
        old = [f"{ln}\n" for ln in module_text(f.source_file.removeprefix("a/lib/")).split("\n")]
        new, at = [], 0
        for h in f:
            new += old[at : h.source_start - 1]
            new += [ln.value for ln in h if not ln.is_removed]
            at = h.source_start - 1 + h.source_length
        out.append(("".join(old), "".join(new + old[at:])))
    return out


def time_pygments(
    patches: list[str],
    *,
    clock: Callable[[], float] = time.perf_counter,
    texts: list[tuple[str, str]] | None = None,
) -> float:
    """Pygments alone (`highlight`, HtmlFormatter) on every file's old and new hunk lines
    (or on `texts`, pairs of old and new text)."""
    if texts is None:
        texts = [pair for p in patches for pair in sides(p)]
    lexer, formatter = PythonLexer(), HtmlFormatter()
    start = clock()
    for old, new in texts:
        highlight(old, lexer, formatter)
        highlight(new, lexer, formatter)
    return clock() - start


def time_render(patches: list[str]) -> float:
    hl.clear_caches()
    start = time.perf_counter()
    for p in patches:
        render_patch(p)
    return time.perf_counter() - start


def time_diff2html(patches: list[str]) -> float | None:
    if not D2H.exists() or not shutil.which("node"):
        return None
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "group.diff"
        src.write_text("".join(patches), encoding="utf-8")
        cmd = [str(D2H), "-s", "side", "-f", "html", "-i", "file", "-F", f"{tmp}/o.html"]
        start = time.perf_counter()
        subprocess.run([*cmd, "--", str(src)], check=True, capture_output=True, timeout=300)
        return time.perf_counter() - start


def main() -> None:
    patches = build_group()
    changed = sum(f.added + f.removed for p in patches for f in unidiff.PatchSet(p))
    hunk_lines = sum(o.count("\n") + n.count("\n") for p in patches for o, n in sides(p))
    print(f"{CANDIDATES} candidates, {changed} changed lines, {hunk_lines} highlighted lines")
    pyg = statistics.median(time_pygments(patches) for _ in range(RUNS))
    ours = statistics.median(time_render(patches) for _ in range(RUNS))
    print(f"(a) Pygments alone, same hunk lines: {pyg * 1000:8.1f} ms (median of {RUNS})")
    print(f"(b) render_patch cold, 16 patches:   {ours * 1000:8.1f} ms (median of {RUNS})")
    print(f"    ratio b/a: {ours / pyg:.2f}x (target <= 2x)")
    d2h = time_diff2html(patches)
    if d2h is None:
        print("diff2html-cli not installed under /tmp/d2h; skipped")
    else:
        print(f"(c) diff2html-cli side-by-side:      {d2h * 1000:8.1f} ms (one run, node start)")


if __name__ == "__main__":
    main()
