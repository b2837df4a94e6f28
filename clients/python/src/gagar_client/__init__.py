"""GAGAR Review from a training loop: build and validate bundles, submit a step, wait with a
deadline, and take back advantages keyed by (group id, attempt id). Trainer adapters are in
`gagar_client.adapters` (TRL, verl, OpenRLHF, rLLM)."""

from gagar_client._common import RetryPolicy, Submission
from gagar_client.aclient import AsyncClient
from gagar_client.bundle import Attempt, Group, Task, Trajectory, bundle, validate
from gagar_client.client import Client
from gagar_client.errors import ApiError, BundleError, DeadlineExceeded, GagarError, Problem
from gagar_client.models import (
    AdvantageRow,
    Advantages,
    Grade,
    GraderRun,
    GroupAdvantages,
    Verdict,
)

__all__ = [
    "AdvantageRow",
    "Advantages",
    "ApiError",
    "AsyncClient",
    "Attempt",
    "BundleError",
    "Client",
    "DeadlineExceeded",
    "GagarError",
    "Grade",
    "GraderRun",
    "Group",
    "GroupAdvantages",
    "Problem",
    "RetryPolicy",
    "Submission",
    "Task",
    "Trajectory",
    "Verdict",
    "bundle",
    "validate",
]
