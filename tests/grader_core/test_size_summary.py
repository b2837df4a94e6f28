"""The heuristic grader's summary line counts every file and line (issue 17: it said "0 file(s),
0 changed lines" for a test-only change and "1 file(s)" for two files)."""

from grading.diffs import parse_patch
from grading.grader.heuristic_rules import extract, size_summary

SOURCE = """\
diff --git a/pkg/mod.py b/pkg/mod.py
--- a/pkg/mod.py
+++ b/pkg/mod.py
@@ -1,2 +1,2 @@
 def f():
-    return 1
+    return 2
"""
TEST = """\
diff --git a/tests/test_mod.py b/tests/test_mod.py
--- a/tests/test_mod.py
+++ b/tests/test_mod.py
@@ -1,1 +1,3 @@
 import pkg
+def test_f():
+    assert pkg.mod.f() == 2
"""


def _summary(text: str) -> str:
    features = extract(
        "A",
        True,
        parse_patch(text),
        events=0,
        error_events=(),
        test_literals=set(),
        test_paths=set(),
    )
    return size_summary(features)


def test_a_test_only_change_is_not_zero_files():
    assert _summary(TEST) == "1 file, 2 changed lines (0 source files, 0 lines)"


def test_a_source_and_a_test_file_are_two_files():
    assert _summary(SOURCE + TEST) == "2 files, 4 changed lines (1 source file, 2 lines)"


def test_a_source_only_change_needs_no_breakdown():
    assert _summary(SOURCE) == "1 file, 2 changed lines"
