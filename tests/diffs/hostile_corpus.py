"""Hand-written diffs that break naive parsers, each named for what it tries.

`AGREE` cases must parse exactly as unidiff parses them (or be refused by both); `OURS` cases are
where the project's parser deliberately differs from unidiff, with what it does instead.
"""

from __future__ import annotations

PLAIN = "--- a/x.py\n+++ b/x.py\n@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n"

AGREE: dict[str, str] = {
    "plain": PLAIN,
    "git with index": ("diff --git a/x.py b/x.py\nindex 1111111..2222222 100644\n" + PLAIN),
    "no newline at end, both sides": (
        "--- a/x\n+++ b/x\n@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n+B\n"
        "\\ No newline at end of file\n"
    ),
    "no newline marker on a context line": (
        "--- a/x\n+++ b/x\n@@ -1,2 +1,3 @@\n+new\n a\n b\n\\ No newline at end of file\n"
    ),
    "removed line that looks like a file header": (
        "--- a/notes.md\n+++ b/notes.md\n@@ -1,4 +1,4 @@\n a\n--- old heading\n"
        "+++ new heading\n b\n c\n"
    ),
    "added line that looks like a hunk header": (
        "--- a/x\n+++ b/x\n@@ -1,1 +1,2 @@\n a\n+@@ -1,1 +1,1 @@\n"
    ),
    "added line that looks like a git header": (
        "--- a/doc.txt\n+++ b/doc.txt\n@@ -1 +1,2 @@\n a\n+diff --git a/y b/y\n"
    ),
    "crlf everywhere": PLAIN.replace("\n", "\r\n"),
    "crlf content, lf headers": "--- a/x\n+++ b/x\n@@ -1,2 +1,2 @@\n a\r\n-b\r\n+B\r\n",
    "empty context line without its space": ("--- a/x\n+++ b/x\n@@ -1,3 +1,3 @@\n a\n\n-b\n+B\n"),
    "hunk headers without counts": "--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n",
    "two hunks and a section header": (
        "--- a/x.py\n+++ b/x.py\n@@ -1,2 +1,2 @@ def f():\n-a\n+A\n b\n"
        "@@ -10,2 +10,3 @@ class C:\n c\n+d\n e\n"
    ),
    "new file": (
        "diff --git a/n.py b/n.py\nnew file mode 100644\nindex 0000000..1111111\n"
        "--- /dev/null\n+++ b/n.py\n@@ -0,0 +1,2 @@\n+x\n+y\n"
    ),
    "deleted file": (
        "diff --git a/d.py b/d.py\ndeleted file mode 100644\nindex 1111111..0000000\n"
        "--- a/d.py\n+++ /dev/null\n@@ -1,2 +0,0 @@\n-x\n-y\n"
    ),
    "empty new file (no hunks)": (
        "diff --git a/empty.txt b/empty.txt\nnew file mode 100644\nindex 0000000..e69de29\n"
    ),
    "rename without changes": (
        "diff --git a/old.py b/new.py\nsimilarity index 100%\n"
        "rename from old.py\nrename to new.py\n"
    ),
    "rename with a hunk": (
        "diff --git a/old.py b/pkg/new.py\nsimilarity index 90%\nrename from old.py\n"
        "rename to pkg/new.py\n--- a/old.py\n+++ b/pkg/new.py\n@@ -1 +1 @@\n-x\n+y\n"
    ),
    "mode change only": "diff --git a/run.sh b/run.sh\nold mode 100644\nnew mode 100755\n",
    "git binary": (
        "diff --git a/logo.png b/logo.png\nnew file mode 100644\nindex 0000000..e69de29\n"
        "Binary files /dev/null and b/logo.png differ\n"
    ),
    "plain binary line": "Binary files a/img.png and b/img.png differ\n",
    "binary between text files": (
        PLAIN + "diff --git a/i.png b/i.png\nindex 1..2 100644\nBinary files a/i.png and b/i.png "
        "differ\ndiff --git a/z b/z\n--- a/z\n+++ b/z\n@@ -1 +1 @@\n-1\n+2\n"
    ),
    "timestamps in plain diff -u headers": (
        "--- x.py\t2024-01-01 10:00:00.000000000 +0000\n"
        "+++ x.py\t2024-01-02 10:00:00.000000000 +0000\n@@ -1 +1 @@\n-a\n+b\n"
    ),
    "path with spaces": (
        "diff --git a/my dir/a b.py b/my dir/a b.py\n--- a/my dir/a b.py\n+++ b/my dir/a b.py\n"
        "@@ -1 +1 @@\n-a\n+b\n"
    ),
    "leading newline and a commit message": (
        "\nFrom 1234 Mon Sep 17 00:00:00 2001\nSubject: [PATCH] fix\n\n---\n x.py | 2 +-\n\n"
        + PLAIN
        + "-- \n2.43.0\n"
    ),
    "form feed and unicode line separators are content": (
        "--- a/x\n+++ b/x\n@@ -1,2 +1,2 @@\n a\x0cb\n-c\u2028d\n+e\x1cf\n"
    ),
    "tabs, trailing spaces and odd bytes in content": (
        "--- a/x\n+++ b/x\n@@ -1 +1 @@\n-\tx  \n+\x00y\ufffd\n"
    ),
    "text that is not a diff": "hello\nworld\n",
    "empty": "",
    # Refused by both: the hunk promises more lines than follow.
    "truncated hunk at the end": "--- a/x\n+++ b/x\n@@ -1,3 +1,3 @@\n a\n-b\n",
    "truncated hunk before the next file": (
        "diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -1,5 +1,5 @@\n a\n-b\n+B\n"
        "diff --git a/y b/y\n--- a/y\n+++ b/y\n@@ -1 +1 @@\n-1\n+2\n"
    ),
    "garbage line inside a hunk": "--- a/x\n+++ b/x\n@@ -1,2 +1,2 @@\n a\n?? b\n",
    "hunk with no file header": "@@ -1 +1 @@\n-a\n+b\n",
    "hunk after stray text": (
        "--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\nsome note\n@@ -5 +5 @@\n-c\n+d\n"
    ),
}

# name -> (diff, what our parser says and unidiff does not)
OURS: dict[str, str] = {
    # unidiff calls a file "added" from its hunk counts; the headers say it existed (empty).
    "hunk from line 0 on an existing empty file": (
        "diff --git a/e.txt b/e.txt\nindex e69de29..1111111 100644\n--- a/e.txt\n+++ b/e.txt\n"
        "@@ -0,0 +1 @@\n+now has a line\n"
    ),
    # unidiff keeps git's C quoting ("a/caf\303\251.py"); the path is café.py.
    "quoted path": (
        'diff --git "a/caf\\303\\251.py" "b/caf\\303\\251.py"\n'
        'index 1..2 100644\n--- "a/caf\\303\\251.py"\n+++ "b/caf\\303\\251.py"\n'
        "@@ -1 +1 @@\n-a\n+b\n"
    ),
}
