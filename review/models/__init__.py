"""Blind review: campaigns and assignments (`campaigns`), labels, fix requests and timing
(`labels`)."""

from review.models.analytics import (
    CalibratedLabel,
    CalibrationFit,
    ConsensusLabel,
    StatsSnapshot,
)
from review.models.campaigns import Assignment, Campaign, CampaignGroup, Candidate
from review.models.labels import ActivityEvent, Disagreement, FixRequest, Label

__all__ = [
    "ActivityEvent",
    "Assignment",
    "CalibratedLabel",
    "CalibrationFit",
    "Campaign",
    "CampaignGroup",
    "Candidate",
    "ConsensusLabel",
    "Disagreement",
    "FixRequest",
    "Label",
    "StatsSnapshot",
]
