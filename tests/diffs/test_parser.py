"""The one diff parser (`grading.diffs`) against unidiff, on real SWE-bench patches and on a
hostile corpus.

Where the project's old parsers disagreed, the chosen behaviour has a test here (or, for the
grader's tools, in tests/grader_core/test_tools.py).
"""

from __future__ import annotations

import random
from typing import Any

import pytest
import unidiff
from unidiff.errors import UnidiffParseError

from grading.diffs import is_test_path, parse_patch
from grading.domain.patches import PatchParseError, patch_stats
from tests.diffs._data import swebench_patches
from tests.diffs.hostile_corpus import AGREE, OURS

REAL = swebench_patches(with_task_patches=True)


def _strip(name: str | None, prefix: str) -> str | None:
    name = (name or "").rstrip("\r")
    if not name or name == "/dev/null":
        return None
    return name[len(prefix) :] if name.startswith(prefix) else name


def theirs(text: str) -> list[Any]:
    """unidiff's reading, in our shape: paths, binary flag, hunks with numbered lines."""
    return [
        (
            _strip(pf.source_file, "a/"),
            _strip(pf.target_file, "b/"),
            bool(pf.is_binary_file),
            [
                (
                    h.source_start,
                    h.source_length,
                    h.target_start,
                    h.target_length,
                    [
                        (ln.line_type, ln.source_line_no, ln.target_line_no,
                         ln.value.rstrip("\n").removesuffix("\r"))
                        for ln in h
                        if ln.line_type in ("+", "-", " ")
                    ],
                )
                for h in pf
            ],
        )
        for pf in unidiff.PatchSet(text)
    ]  # fmt: skip


def ours(text: str) -> list[Any]:
    return [
        (
            f.old_path,
            f.new_path,
            f.is_binary,
            [
                (h.old_start, h.old_len, h.new_start, h.new_len,
                 [(ln.kind, ln.old_no, ln.new_no, ln.content) for ln in h.lines])
                for h in f.hunks
            ],
        )
        for f in parse_patch(text).files
    ]  # fmt: skip


def _unidiff_refuses(text: str) -> bool:
    try:
        unidiff.PatchSet(text)
    except UnidiffParseError:
        return True
    return False


@pytest.mark.skipif(not REAL, reason="shared SWE-bench groups not available")
def test_every_real_patch_reads_exactly_as_unidiff_reads_it() -> None:
    assert len(REAL) == 332  # 278 candidates, 27 gold and 27 test patches
    for name, text in REAL:
        patch = parse_patch(text)
        assert patch.problems == (), name
        assert ours(text) == theirs(text), name
        for f, pf in zip(patch.files, unidiff.PatchSet(text), strict=True):
            assert (f.lines_added, f.lines_removed) == (pf.added, pf.removed), name


@pytest.mark.parametrize("name", sorted(AGREE))
def test_hostile_diffs_read_as_unidiff_reads_them_or_are_refused_by_both(name: str) -> None:
    text = AGREE[name]
    patch = parse_patch(text)
    refused = _unidiff_refuses(text)
    assert bool(patch.problems) == refused, (name, patch.problems)
    if not refused:
        assert ours(text) == theirs(text)
    # The same text as bytes, as the importer stores it, reads the same.
    assert parse_patch(text.encode()) == patch


def test_a_refused_diff_still_yields_what_was_read_before_the_problem() -> None:
    patch = parse_patch(AGREE["truncated hunk before the next file"])
    assert [f.path for f in patch] == ["x", "y"]
    x, y = patch.files
    assert x.removed == {2: "b"} and x.added == {2: "B"} and y.added == {1: "2"}
    assert "ends early" in patch.problems[0] and patch.problems[0].startswith("line 8:")
    with pytest.raises(PatchParseError, match="ends early"):
        patch_stats(AGREE["truncated hunk before the next file"].encode())


def test_content_that_looks_like_headers_stays_content() -> None:
    (f,) = parse_patch(AGREE["removed line that looks like a file header"])
    assert f.removed == {2: "-- old heading"} and f.added == {2: "++ new heading"}
    (g,) = parse_patch(AGREE["added line that looks like a git header"])
    assert g.added == {2: "diff --git a/y b/y"}


def test_no_newline_markers_flag_the_line_before_them() -> None:
    (f,) = parse_patch(AGREE["no newline at end, both sides"])
    marked = [(ln.kind, ln.text) for ln in f.hunks[0].lines if ln.no_newline]
    assert marked == [("-", "b"), ("+", "B")]


def test_crlf_lines_keep_their_carriage_return_for_display_but_not_in_content() -> None:
    """Old copies disagreed: the grader's index kept "\\r" in added text, the analysis grader
    dropped it. Content (what evidence, compare and analysis read) is without it; the text the
    renderer shows keeps it."""
    (f,) = parse_patch(AGREE["crlf everywhere"])
    assert f.path == "x.py"
    assert f.added == {2: "B"} and f.removed == {2: "b"}
    assert [ln.text for ln in f.hunks[0].lines] == ["a\r", "b\r", "B\r", "c\r"]


def test_change_kind_comes_from_the_headers_not_the_hunk_counts() -> None:
    """unidiff (and so the importer's old statistics) called a file with one "@@ -0,0" hunk
    added, though its headers say it existed; the grader's index said modified. Modified."""
    (f,) = parse_patch(OURS["hunk from line 0 on an existing empty file"])
    assert (f.change, f.is_new, f.old_path) == ("modified", False, "e.txt")
    (stats,) = patch_stats(OURS["hunk from line 0 on an existing empty file"].encode()).files
    assert stats.change == "modified" and stats.source_path == "e.txt"


def test_quoted_git_paths_are_unquoted() -> None:
    """unidiff (the importer, the grader's index, the analysis grader) kept git's C quoting;
    the reviewer's parser unquoted it. The path is the file's real name."""
    (f,) = parse_patch(OURS["quoted path"])
    assert f.old_path == f.new_path == "café.py"


def test_file_names_with_bytes_that_are_not_utf8_become_replacement_characters() -> None:
    """The importer decoded with surrogateescape, giving names PostgreSQL cannot store; the
    reviewer's parser used U+FFFD. U+FFFD, and the line counts do not change."""
    data = b"--- a/caf\xe9.py\n+++ b/caf\xe9.py\n@@ -1 +1 @@\n-a\xff\n+b\n"
    (stats,) = patch_stats(data).files
    assert stats.target_path == "caf\ufffd.py"
    assert (stats.lines_added, stats.lines_removed) == (1, 1)
    stats.target_path.encode("utf-8")  # storable


def test_binary_files_keep_their_change_kind_and_carry_a_flag() -> None:
    """The reviewer's parser made "binary" a change kind; statistics kept it apart. A binary
    file is added, modified... and binary (the diff page still labels it "binary")."""
    added, renamed = parse_patch(AGREE["git binary"] + AGREE["rename without changes"])
    assert (added.change, added.is_binary, added.hunks) == ("added", True, ())
    assert (renamed.change, renamed.old_path, renamed.new_path) == ("renamed", "old.py", "new.py")
    (plain,) = parse_patch(AGREE["plain binary line"])
    assert (plain.path, plain.change, plain.is_binary) == ("img.png", "modified", True)


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("tests/test_x.py", True),
        ("pkg/test_x.py", True),
        ("pkg/x_test.py", True),
        ("conftest.py", True),
        ("src/a.test.ts", True),
        # The heuristic grader's copy knew only Python and JS names: these were core files there.
        ("pkg/server_test.go", True),
        ("spec/models/user_spec.rb", True),
        ("src/__tests__/a.js", True),
        ("src/contest.py", False),
        ("testing_utils.py", False),
        ("src/latest/x.py", False),
    ],
)
def test_is_test_path(path: str, expected: bool) -> None:
    assert is_test_path(path) is expected


def test_every_line_points_at_the_raw_line_it_was_read_from() -> None:
    for text in [*AGREE.values(), *OURS.values()]:
        patch = parse_patch(text)
        for f in patch:
            assert 0 <= f.start <= f.end <= len(patch.lines)
            for h in f.hunks:
                assert f.start <= h.raw < f.end and patch.lines[h.raw].startswith("@@ ")
                for ln in h.lines:
                    raw = patch.lines[ln.raw]
                    assert raw[1:] == ln.text or (raw in ("", "\r") and ln.kind == " ")


@pytest.mark.skipif(not REAL, reason="shared SWE-bench groups not available")
def test_cut_and_mangled_real_patches_never_raise() -> None:
    rng = random.Random(12)
    for _, text in rng.sample(REAL, 40):
        for _ in range(10):
            cut = text[: rng.randrange(len(text) + 1)]
            lines = text.split("\n")
            i = rng.randrange(len(lines))
            lines[i] = rng.choice(["", "\\ No newline at end of file", "@@ -1 +1 @@", "--- x"])
            for mangled in (cut, "\n".join(lines), cut.replace("\n", "\r\n")):
                patch = parse_patch(mangled)
                assert all(ln.kind in "+- " for f in patch for h in f.hunks for ln in h.lines)
