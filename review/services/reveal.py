"""The reveal policy: when a reviewer may see the grader's verdict (and so argue with it)."""

from __future__ import annotations

from grading.models import GraderRun
from review.models import Assignment, Campaign
from review.selectors.reviewing import latest_verdict_run


def verdict_to_reveal(*, assignment: Assignment) -> GraderRun | None:
    """The run this assignment's reviewer will see once they submit, or None if never."""
    if assignment.campaign.reveal_policy != Campaign.Reveal.AFTER_SUBMISSION:
        return None
    return latest_verdict_run(group_id=assignment.group_id)


def revealed_run(*, assignment: Assignment) -> GraderRun | None:
    """The grader run whose verdict this reviewer may see now, or None.

    Only after they submitted (a verdict seen before would anchor their labels), only in a
    campaign that reveals, and only when a run succeeded.
    """
    if assignment.status != Assignment.Status.SUBMITTED:
        return None
    return verdict_to_reveal(assignment=assignment)
