"""Hunk fingerprints, so a reviewer can see which changes most candidates made.

A signature hashes what a hunk removes and adds, with whitespace collapsed and blank lines
dropped, and without line numbers: the same edit made at a different offset (because another
hunk above it added lines) or with different indentation style compares equal.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from grading.diffs import Hunk, parse_patch


@dataclass(frozen=True, slots=True)
class HunkSignature:
    path: str
    old_start: int
    signature: str


def _normalise(text: str) -> str:
    return " ".join(text.split())


def hunk_signature(hunk: Hunk) -> str:
    parts = [
        f"{line.kind}{norm}"
        for line in hunk.lines
        if line.kind != " " and (norm := _normalise(line.text))
    ]
    return hashlib.sha256("\n".join(parts).encode("utf-8", errors="surrogatepass")).hexdigest()


def hunk_signatures(diff: str | bytes) -> list[HunkSignature]:
    """One signature per hunk, in patch order (binary files have none)."""
    return [
        HunkSignature(f.path, h.old_start, hunk_signature(h))
        for f in parse_patch(diff)
        for h in f.hunks
    ]


def shared_changes(patches: Mapping[str, str | bytes]) -> dict[str, list[tuple[int, float]]]:
    """For each candidate, each hunk's index and the share of candidates with the same change.

    The share counts the candidate itself, so a change nobody else made has share 1/N; a
    candidate repeating a hunk is counted once. Changes are matched on (path, signature).
    """
    return shares_of({cand: hunk_signatures(diff) for cand, diff in patches.items()})


def shares_of(
    sigs: Mapping[str, Sequence[HunkSignature]],
) -> dict[str, list[tuple[int, float]]]:
    """`shared_changes` from each candidate's signatures (for callers that keep them)."""
    holders: dict[tuple[str, str], set[str]] = {}
    for cand, items in sigs.items():
        for s in items:
            holders.setdefault((s.path, s.signature), set()).add(cand)
    total = len(sigs) or 1
    return {
        cand: [(i, len(holders[(s.path, s.signature)]) / total) for i, s in enumerate(items)]
        for cand, items in sigs.items()
    }
