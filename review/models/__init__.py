"""Blind review: campaigns and assignments (`campaigns`), what a reviewer records — labels, fix
requests, activity, disagreement flags (`reviewing`) — and the analytics results (`analytics`)."""

from review.models.analytics import (
    CalibratedLabel,
    CalibrationFit,
    ConsensusLabel,
    StatsSnapshot,
)
from review.models.campaigns import Assignment, Campaign, CampaignGroup, Candidate
from review.models.reviewing import ActivityEvent, ClaimMark, Disagreement, FixRequest, Label

__all__ = [
    "ActivityEvent",
    "Assignment",
    "CalibratedLabel",
    "CalibrationFit",
    "Campaign",
    "CampaignGroup",
    "Candidate",
    "ClaimMark",
    "ConsensusLabel",
    "Disagreement",
    "FixRequest",
    "Label",
    "StatsSnapshot",
]
