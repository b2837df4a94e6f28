"""Plain inputs of one grader run, filled by the service layer from the database.

Nothing here knows about Django: the service copies rows into these dataclasses and the loop
reads them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

Event = Mapping[str, Any]
# Either the events themselves or a reader `(start, count) -> events` so that long trajectories
# can stay compressed in the database until the grader asks for a slice.
TrajectorySource = Sequence[Event] | Callable[[int, int], Sequence[Event]]

CRITERIA: tuple[str, ...] = (
    "approach_suitability",
    "implementation_precision",
    "minimality_of_changes",
    "unintended_side_effects",
    "codebase_consistency",
)


@dataclass(frozen=True)
class TaskInput:
    problem_statement: str
    repo_path: Path | None
    base_commit: str
    test_command: str = ""
    fail_to_pass: Sequence[str] = ()
    pass_to_pass: Sequence[str] = ()
    # The tests that decide pass/fail, when the task ships them as a patch (SWE-bench style).
    test_patch: str = ""
    # The maintainers' fix (SWE-bench `patch`): reference material for the grader, never a
    # candidate (tool view_reference_patch).
    reference_patch: str = ""
    repo: str = ""  # owner/name, for the prompt
    # Why repo_path is None ("no source: …"), said in the prompt; empty when there is a source.
    source_note: str = ""


@dataclass(frozen=True)
class CandidateInput:
    key: str  # opaque to the grader, e.g. the attempt's primary key as a string
    patch: str
    passed: bool
    status: str = "valid"
    test_output: str = ""
    test_report: Mapping[str, Any] = field(default_factory=dict)
    trajectory: TrajectorySource = ()
    num_turns: int | None = None
    tokens: int | None = None
    # Needed only when `trajectory` is a reader; otherwise len(trajectory) is used.
    num_events: int | None = None

    def event_slice(self, start: int, count: int) -> list[Event]:
        if start < 0 or count <= 0:
            return []
        if callable(self.trajectory):
            return list(self.trajectory(start, count))
        return list(self.trajectory[start : start + count])

    def event_count(self) -> int:
        if not callable(self.trajectory):
            return len(self.trajectory)
        if self.num_events is not None:
            return self.num_events
        return sum(1 for _ in self.iter_events())

    def iter_events(self, chunk: int = 200) -> Iterator[tuple[int, Event]]:
        start = 0
        while True:
            events = self.event_slice(start, chunk)
            for offset, event in enumerate(events):
                yield start + offset, event
            if len(events) < chunk:
                return
            start += chunk


@dataclass(frozen=True)
class GroupInput:
    task: TaskInput
    candidates: Sequence[CandidateInput]
    # Who produced the attempts (agent systems, models, run name) and configured patterns:
    # never shown to the grader, only used to redact the trajectories it reads.
    identity_names: Sequence[str] = ()
    identity_patterns: Sequence[str] = ()


@dataclass(frozen=True)
class Rubric:
    """Weights of the five criteria (method §5); the articles publish none, so default equal."""

    weights: Mapping[str, float] = field(default_factory=lambda: dict.fromkeys(CRITERIA, 1.0))

    def __post_init__(self) -> None:
        if set(self.weights) != set(CRITERIA):
            raise ValueError(f"rubric weights must name exactly {CRITERIA}")
        if any(w < 0 for w in self.weights.values()) or sum(self.weights.values()) <= 0:
            raise ValueError("rubric weights must be non-negative with a positive sum")

    def weighted(self, scores: Mapping[str, float]) -> float:
        total = sum(self.weights.values())
        return sum(self.weights[c] * scores[c] for c in CRITERIA) / total


@dataclass(frozen=True)
class Budget:
    """What one run may spend. The model sees what is left in every turn."""

    max_steps: int = 40  # backend calls
    max_input_tokens: int = 600_000  # summed over calls, cached tokens included
    max_output_tokens: int = 60_000
    wall_seconds: float = 1800.0
    # Per reply. Reasoning tokens count here too, so reasoning models need more; a reply cut at
    # this limit is answered ("send it in parts") and the next one may use twice as much.
    max_output_tokens_per_call: int = 8192
    max_parallel_calls: int = 8  # exploration calls run per turn; submission calls are extra
    max_usd: float | None = None  # the run stops before a call that could pass it
    max_total_tokens: int | None = None  # input + output, a spend limit like max_usd


@dataclass(frozen=True)
class Pricing:
    """USD per million tokens; cached input is what a prompt-cache hit costs."""

    input: float = 0.0
    cached_input: float | None = None  # None: same as input
    output: float = 0.0

    @property
    def known(self) -> bool:
        return bool(self.input or self.output)

    def cost(self, input_tokens: int, cached_tokens: int, output_tokens: int) -> float:
        cached = self.input if self.cached_input is None else self.cached_input
        fresh = max(0, input_tokens - cached_tokens)
        return (fresh * self.input + cached_tokens * cached + output_tokens * self.output) / 1e6
