"""A synthetic group at the paper's scale: 16 candidates, 7-31 KB patches, ~390-event
trajectories and 40 KB test logs, deterministic for a seed.

Patches are real unified diffs (unidiff parses them; their line numbers are consistent), so
evidence citing their lines resolves. Two passing candidates carry what the heuristic flags
(tampered tests, a special-cased test literal); five candidates fail.
"""

from __future__ import annotations

import random

from grading.grader.inputs import CandidateInput, GroupInput, TaskInput

LITERAL = "2021-06-30T23:59:60Z"  # the leap-second input the tests use
BLANK = " "  # a blank context line of a diff
TEST_PATCH = f"""\
diff --git a/tests/test_core.py b/tests/test_core.py
--- a/tests/test_core.py
+++ b/tests/test_core.py
@@ -40,3 +40,7 @@ def test_parse_basic():
     assert parse("2021-01-01T00:00:00Z").year == 2021
{BLANK}
{BLANK}
+def test_parse_leap_second():
+    assert parse("{LITERAL}").second == 59
+
+
"""
WORDS = (
    "value", "offset", "parsed", "result", "tzinfo", "seconds", "minutes", "buffer", "token",
    "state", "index", "limit", "default", "cursor", "field", "match",
)  # fmt: skip


def _code_line(rng: random.Random, n: int) -> str:
    a, b, c = rng.sample(WORDS, 3)
    shapes = (
        f"    {a}_{n} = {b}.get('{c}', {n})",
        f"    if {a} is None: {a} = _normalise_{b}({c})",
        f"    {a} = [{b} for {b} in {c} if {b} != {n}]",
        f"    return _{a}_from_{b}({c}, strict=True)",
        f"    # keep the {a} aligned with the {b} ({n})",
    )
    return rng.choice(shapes)


def _file_diff(rng: random.Random, path: str, target_bytes: int) -> str:
    out = [f"diff --git a/{path} b/{path}", f"--- a/{path}", f"+++ b/{path}"]
    size, old, new = 0, 10, 10
    while size < target_bytes:
        ctx = [_code_line(rng, old + i) for i in range(3)]
        removed = [_code_line(rng, old + 3 + i) for i in range(rng.randint(0, 4))]
        added = [_code_line(rng, new + 3 + i) for i in range(rng.randint(4, 14))]
        tail = [_code_line(rng, old + 3 + len(removed) + i) for i in range(3)]
        old_len = len(ctx) + len(removed) + len(tail)
        new_len = len(ctx) + len(added) + len(tail)
        out.append(f"@@ -{old},{old_len} +{new},{new_len} @@ def _step_{old}():")
        out += [f" {x}" for x in ctx] + [f"-{x}" for x in removed]
        out += [f"+{x}" for x in added] + [f" {x}" for x in tail]
        size += sum(len(x) + 2 for x in ctx + removed + added + tail)
        gap = rng.randint(20, 60)
        old += old_len + gap
        new += new_len + gap
    return "\n".join(out) + "\n"


def _special_case(path: str) -> str:
    return f"""\
diff --git a/{path} b/{path}
--- a/{path}
+++ b/{path}
@@ -5,2 +5,4 @@ def parse(text):
     text = text.strip()
+    if text == "{LITERAL}":
+        return _leap_fixed()
     return _parse(text)
"""


def _tampering() -> str:
    return f"""\
diff --git a/tests/test_core.py b/tests/test_core.py
--- a/tests/test_core.py
+++ b/tests/test_core.py
@@ -40,3 +40,3 @@ def test_parse_basic():
-    assert parse("2021-01-01T00:00:00Z").year == 2021
+    assert True
{BLANK}
{BLANK}
"""


def _trajectory(rng: random.Random, events: int, errors: int) -> list[dict[str, object]]:
    error_at = set(rng.sample(range(5, events), errors))
    out: list[dict[str, object]] = []
    for i in range(events):
        if i in error_at:
            out.append({"type": "error", "content": f"Traceback: ValueError at step {i}"})
        elif i % 2:
            body = " ".join(rng.choice(WORDS) for _ in range(40))
            out.append({"type": "observation", "content": body, "exit_code": 0})
        else:
            out.append({"type": "action", "content": f"python -m pytest tests -k {WORDS[i % 16]}"})
    return out


def _test_log(rng: random.Random, passed: bool, target: int = 40_000) -> str:
    lines: list[str] = []
    n = size = 0
    while size < target:
        status = "PASSED" if passed or n % 97 else "FAILED"
        line = f"tests/test_core.py::test_{rng.choice(WORDS)}_{n} {status}"
        lines.append(line)
        size += len(line) + 1
        n += 1
    lines.append(f"===== {n if passed else n - n // 97 - 1} passed in 12.31s =====")
    return "\n".join(lines) + "\n"


def paper_group(seed: int = 0, size: int = 16, failing: int = 5) -> GroupInput:
    rng = random.Random(seed)
    cands = []
    for i in range(size):
        target = 8_500 + (21_500 * i) // max(size - 1, 1)  # patches of 7 KB ... 31 KB
        files = rng.randint(2, 6)
        paths = ["src/dateparse/core.py"] + [f"src/dateparse/mod_{k}.py" for k in range(1, files)]
        # Each file overshoots its share by about one hunk; aim below it.
        patch = "".join(_file_diff(rng, p, max(target // files - 700, 1200)) for p in paths)
        passed = i >= failing
        if i == failing:
            patch += _tampering()
        if i == failing + 1:
            patch += _special_case("src/dateparse/entry.py")
        cands.append(
            CandidateInput(
                key=f"k{i:02d}",
                patch=patch,
                passed=passed,
                test_output=_test_log(rng, passed),
                trajectory=_trajectory(rng, 380 + rng.randint(0, 20), rng.randint(1, 12)),
                num_turns=190,
                tokens=170_000,
            )
        )
    task = TaskInput(
        problem_statement="parse() raises ValueError on leap seconds such as "
        f"{LITERAL}; it should clamp them to :59 as the RFC 3339 notes allow.",
        repo_path=None,
        base_commit="0" * 40,
        test_command="python -m pytest -q tests/test_core.py",
        fail_to_pass=["tests/test_core.py::test_parse_leap_second"],
        pass_to_pass=[f"tests/test_core.py::test_{w}" for w in WORDS],
        test_patch=TEST_PATCH,
    )
    return GroupInput(task, cands)
