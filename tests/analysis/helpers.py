"""Build real unified diffs (difflib, git-style headers) from before/after texts."""

from __future__ import annotations

import difflib
from collections.abc import Mapping

from grading.grader.analysis.inputs import AnalysisInput, CandidatePatch


def diff(files: Mapping[str, tuple[str | None, str | None]], context: int = 3) -> str:
    """A patch changing each path from `before` to `after` (None: the file does not exist)."""
    out = []
    for path, (before, after) in files.items():
        a = (before or "").splitlines(keepends=True)
        b = (after or "").splitlines(keepends=True)
        src = f"a/{path}" if before is not None else "/dev/null"
        dst = f"b/{path}" if after is not None else "/dev/null"
        out.append(f"diff --git a/{path} b/{path}\n")
        if before is None:
            out.append("new file mode 100644\n")
        body = list(difflib.unified_diff(a, b, src, dst, n=context))
        out += [ln if ln.endswith("\n") else ln + "\n" for ln in body]
    return "".join(out)


def one_file(
    path: str,
    base: str,
    candidates: Mapping[str, str],
    *,
    reference: str | None = None,
    source: bool,
    problem: str = "",
) -> AnalysisInput:
    """A group whose candidates (and reference) each change the one file `path` from `base`;
    with `source`, the grader reads `base` as the repository's file, else only the patches."""
    return AnalysisInput(
        candidates=[CandidatePatch(k, diff({path: (base, t)})) for k, t in candidates.items()],
        reference_patch=diff({path: (base, reference)}) if reference is not None else None,
        problem_statement=problem,
        test_patch="",
        test_names=(),
        read_base=(lambda p: base if p == path else None) if source else None,
    )
