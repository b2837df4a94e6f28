"""Rollouts (`rollouts`), grader runs and verdicts (`grader`), advantages (`training`) and the
data version the statistics are cached under (`versions`)."""

from grading.models.grader import (
    CandidateGrade,
    GraderApproval,
    GraderConfig,
    GraderEvent,
    GraderFit,
    GraderRun,
    RunGraderSwitch,
)
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
from grading.models.versions import DataVersion

__all__ = [
    "ApiToken",
    "Attempt",
    "CandidateGrade",
    "DataVersion",
    "GraderApproval",
    "GraderConfig",
    "GraderEvent",
    "GraderFit",
    "GraderRun",
    "Group",
    "GroupAdvantages",
    "IdempotencyKey",
    "Patch",
    "PatchFile",
    "Run",
    "RunGraderSwitch",
    "Step",
    "Task",
    "Trajectory",
    "TrajectoryChunk",
]
