"""Rollouts (`rollouts`), grader runs and verdicts (`grader`)."""

from grading.models.grader import CandidateGrade, GraderConfig, GraderEvent, GraderRun
from grading.models.rollouts import (
    ApiToken,
    Attempt,
    Group,
    Patch,
    PatchFile,
    Run,
    Step,
    Task,
    Trajectory,
    TrajectoryChunk,
)
from grading.models.training import GroupAdvantages, IdempotencyKey

__all__ = [
    "ApiToken",
    "Attempt",
    "CandidateGrade",
    "GraderConfig",
    "GraderEvent",
    "GraderRun",
    "Group",
    "GroupAdvantages",
    "IdempotencyKey",
    "Patch",
    "PatchFile",
    "Run",
    "Step",
    "Task",
    "Trajectory",
    "TrajectoryChunk",
]
