"""Every real candidate patch in the shared SWE-bench groups renders, and counts match unidiff."""

from __future__ import annotations

import pytest
import unidiff

from review.diffs import parse_patch, render_file, render_patch
from tests.diffs._data import swebench_patches
from tests.diffs._html import code_cells

PATCHES = swebench_patches()


@pytest.mark.skipif(not PATCHES, reason="shared SWE-bench groups not available")
def test_it_has_all_278_candidates() -> None:
    assert len(PATCHES) == 278


@pytest.mark.skipif(not PATCHES, reason="shared SWE-bench groups not available")
@pytest.mark.slow
def test_it_renders_every_candidate_with_unidiff_counts() -> None:
    seen: set[str] = set()
    for name, patch in PATCHES:
        expected = sorted((f.path, f.added, f.removed) for f in unidiff.PatchSet(patch))
        rendered = render_patch(patch)
        assert sorted((r.path, r.added, r.removed) for r in rendered) == expected, name
        # Some systems submitted byte-identical patches; read the HTML of each one once.
        if patch in seen:
            continue
        seen.add(patch)

        # Count what the HTML really shows, over every page of every file.
        for file, first in zip(parse_patch(patch), rendered, strict=True):
            pages = [first] + [render_file(file, page=p) for p in range(2, first.pages + 1)]
            shown_added = shown_removed = 0
            for r in pages:
                shown_added += len(code_cells(r.html, "new", "ins"))
                shown_removed += len(code_cells(r.html, "old", "del"))
            assert (shown_added, shown_removed) == (first.added, first.removed), name
            # Only files past the highlighting threshold (e.g. a vendored cacert.pem) go plain.
            if not first.highlighted:
                assert first.change == "binary" or first.pages > 1, name
