"""The analysis grader's plain inputs and outputs (no Django: the backend fills and reads them)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

from grading.grader.analysis.views import Reader

Side = Literal["pre", "post"]


@dataclass(frozen=True)
class CandidatePatch:
    key: str  # opaque to the engine (an attempt id, an alias, a patch hash)
    patch: str


@dataclass(frozen=True)
class AnalysisInput:
    """One group: its distinct passing patches and what a reviewer would read beside them."""

    candidates: Sequence[CandidatePatch]
    reference_patch: str | None = None  # the maintainers' fix, when the task has one
    problem_statement: str = ""
    test_patch: str = ""  # the tests that decide pass/fail, when shipped as a patch
    test_names: Sequence[str] = ()  # FAIL_TO_PASS / PASS_TO_PASS ids
    read_base: Reader | None = None  # reads a file at the base commit (a repository mirror)


@dataclass(frozen=True)
class CodeRef:
    """`code` evidence (method §5): lines of the candidate's diff, post side or pre side."""

    candidate: str
    path: str
    line_start: int
    line_end: int
    side: Side

    def as_evidence(self, alias: str | None = None) -> dict[str, object]:
        return {
            "type": "code",
            "candidate": alias or self.candidate,
            "path": self.path,
            "line_start": self.line_start,
            "line_end": self.line_end,
            "side": self.side,
        }


@dataclass(frozen=True)
class Observation:
    """One feature of one candidate: its value, the lines behind it and what was seen there."""

    name: str
    value: float
    evidence: tuple[CodeRef, ...] = ()
    details: tuple[str, ...] = ()


@dataclass
class Evidence:
    """Collects cited lines per feature while a candidate is analysed."""

    candidate: str
    refs: dict[str, list[CodeRef]] = field(default_factory=dict)
    details: dict[str, list[str]] = field(default_factory=dict)

    def cite(
        self, feature: str, path: str, lines: Sequence[int], side: Side, note: str = ""
    ) -> None:
        for start, end in runs(lines):
            self.refs.setdefault(feature, []).append(
                CodeRef(self.candidate, path, start, end, side)
            )
        if note:
            self.details.setdefault(feature, []).append(note)


def runs(lines: Sequence[int], limit: int = 10, most: int = 3) -> list[tuple[int, int]]:
    """Up to `most` runs of consecutive line numbers, each at most `limit` long."""
    out: list[tuple[int, int]] = []
    for n in sorted(set(lines)):
        if out and n == out[-1][1] + 1 and n - out[-1][0] < limit:
            out[-1] = (out[-1][0], n)
        elif len(out) < most:
            out.append((n, n))
        else:
            break
    return out
