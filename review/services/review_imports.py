"""Write reviews done elsewhere into an imported campaign, as submitted labels.

Each file is one reviewer (pseudonymous: an account that cannot log in, named after the
campaign and the file); each line one task. A line's candidates are matched by patch SHA-256
with the distinct passing patches of the task's group; a label for an unknown task or patch is
a problem naming file, line and hash. The import is all-or-nothing unless partial (then the
valid lines are written and the rest reported); re-importing the same line is a no-op.
"""

from __future__ import annotations

import hashlib
import re
import secrets
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from django.contrib.auth import get_user_model
from django.contrib.auth.models import User
from django.db import transaction
from django.db.models import Count, Max
from django.utils import timezone

from grading.domain.candidates import distinct_patches
from grading.domain.records import ImportProblem
from grading.domain.reviews_file import TaskReview, as_json, read_reviews, review_notes
from grading.domain.wording import plural, shown
from grading.models import Attempt, Group, Task
from grading.services.data_version import data_changed
from grading.services.sources import json_reader
from review.blinding import alias_for
from review.models import Assignment, Campaign, CampaignGroup, Candidate, Label

Outcome = str  # "created", "unchanged", "replaced"


@dataclass
class ReviewImportReport:
    campaign: str
    created: int = 0
    unchanged: int = 0
    replaced: int = 0
    labels: int = 0
    problems: list[ImportProblem] = field(default_factory=list)
    rolled_back: bool = False

    def summary(self) -> str:
        if self.rolled_back:
            return (
                f"nothing written ({plural(len(self.problems), 'problem')}; the import is "
                "all-or-nothing, "
                "--partial imports the valid lines, if any)"
            )
        head = (
            f"campaign {shown(self.campaign)} (imported): "
            f"{plural(self.created, 'review')} created, "
            f"{self.unchanged} unchanged, {self.replaced} replaced, "
            f"{plural(self.labels, 'label')} written"
        )
        skipped = plural(len(self.problems), "line")
        return head + (f"; {skipped} skipped" if self.problems else "")


class ReviewImportFailedError(Exception):
    def __init__(self, report: ReviewImportReport) -> None:
        super().__init__(report.summary())
        self.report = report


class _LineProblem(Exception):
    def __init__(self, problem: ImportProblem) -> None:
        super().__init__(str(problem))
        self.problem = problem


def reviewer_name(path: Path) -> str:
    """The reviewer a file stands for: its name without extension (rater-1.jsonl → rater-1)."""
    return path.name.split(".", 1)[0] or path.name


def _pseudonym(campaign: Campaign, reviewer: str) -> User:
    slug = re.sub(r"[^\w.@+-]+", "-", reviewer).strip("-")[:100] or "reviewer"
    user, created = get_user_model().objects.get_or_create(
        username=f"imported-{campaign.pk}-{slug}"[:150],
        defaults={"is_active": False, "first_name": "imported reviewer"},
    )
    if created:
        user.set_unusable_password()
        user.save(update_fields=["password"])
    return user


def _campaign(name: str, now: datetime) -> Campaign:
    campaign = Campaign.objects.filter(name=name).first()
    if campaign is None:
        return Campaign.objects.create(
            name=name,
            origin=Campaign.Origin.IMPORTED,
            # Nothing to hand out: the reviews are done.
            status=Campaign.Status.CLOSED,
            overlap=1,
            rubric_required=False,
            show_trajectories=False,
            show_test_output=False,
            filters={"imported": True},
        )
    if not campaign.imported:
        raise _LineProblem(
            ImportProblem(
                "",
                None,
                "--campaign",
                f"campaign {shown(name)} exists and holds reviews made here; import into "
                "a new name",
            )
        )
    return campaign


def _group(review: TaskReview, run: str | None, step: int | None) -> Group:
    if not Task.objects.filter(external_id=review.instance_id).exists():
        raise _LineProblem(
            review.problem(
                "$.instance_id", f"no task {shown(review.instance_id)}: import its run first"
            )
        )
    groups = Group.objects.filter(task__external_id=review.instance_id).select_related("step__run")
    if run is not None:
        groups = groups.filter(step__run__name=run)
    if step is not None:
        groups = groups.filter(step__number=step)
    found = list(groups[:6])
    if not found:
        where = [f"run {shown(run)}" if run else "", f"step {step}" if step is not None else ""]
        raise _LineProblem(
            review.problem(
                "$.instance_id",
                f"task {shown(review.instance_id)} has no group in "
                f"{' '.join(w for w in where if w)}",
            )
        )
    if len(found) > 1:
        names = ", ".join(f"{g.step.run.name} step {g.step.number}" for g in found[:5])
        raise _LineProblem(
            review.problem(
                "$.instance_id",
                f"task {shown(review.instance_id)} has groups in several runs or steps ({names}): "
                "choose one with --run / --step",
            )
        )
    return found[0]


def _matched(review: TaskReview, group: Group) -> list[tuple[Attempt, int]]:
    """(the candidate's attempt, index in the line) per reviewed patch; problems for the rest."""
    attempts = list(group.attempts.select_related("patch").order_by("index"))
    passing = [a for a in attempts if a.passed and a.patch is not None]
    by_sha = {
        unit[0].patch.sha256: unit[0]
        for unit in distinct_patches(passing, lambda a: a.patch_id)
        if unit[0].patch is not None
    }
    other = {a.patch.sha256 for a in attempts if a.patch is not None and a not in passing}
    out = []
    for index, c in enumerate(review.candidates):
        attempt = by_sha.get(c.patch_sha256)
        if attempt is None:
            why = (
                "is the patch of an attempt that did not pass: only passing candidates are reviewed"
                if c.patch_sha256 in other
                else f"is not the SHA-256 of any patch in the group of {shown(review.instance_id)}"
            )
            raise _LineProblem(review.problem(f"{c.field}.patch_sha256", f"{c.patch_sha256} {why}"))
        out.append((attempt, index))
    return out


def _write(
    review: TaskReview,
    group: Group,
    matched: list[tuple[Attempt, int]],
    campaign: Campaign,
    reviewer: User,
    replace: bool,
    now: datetime,
) -> tuple[Outcome, int]:
    existing = (
        Assignment.objects.firsts()
        .filter(campaign=campaign, group=group, reviewer=reviewer)
        .first()
    )
    outcome: Outcome = "created"
    if existing is not None:
        if existing.imported.get("sha256") == review.sha256:
            return "unchanged", 0
        if not replace:
            raise _LineProblem(
                review.problem(
                    "",
                    f"{reviewer.get_username()} already has a different review of "
                    f"{shown(review.instance_id)} in this campaign (--replace to overwrite it)",
                )
            )
        existing.delete()
        outcome = "replaced"
    entry = CampaignGroup.objects.filter(campaign=campaign, group=group).first()
    if entry is None:
        top = CampaignGroup.objects.filter(campaign=campaign).aggregate(top=Max("position"))["top"]
        CampaignGroup.objects.create(
            campaign=campaign, group=group, position=0 if top is None else top + 1
        )
    assignment = Assignment.objects.create(
        campaign=campaign,
        group=group,
        reviewer=reviewer,
        status=Assignment.Status.SUBMITTED,
        started_at=now,
        expires_at=now,
        submitted_at=now,
        imported={**as_json(review), "reviewer": reviewer.get_username()},
    )
    candidates = Candidate.objects.bulk_create(
        Candidate(
            assignment=assignment,
            attempt=attempt,
            alias=alias_for(position),
            position=position,
            token=secrets.token_urlsafe(12),
        )
        for position, (attempt, _) in enumerate(matched)
    )
    if candidates and candidates[0].pk is None:  # backends without RETURNING ids
        candidates = list(assignment.candidates.order_by("position"))
    labels = []
    for candidate, (_, index) in zip(candidates, matched, strict=True):
        c = review.candidates[index]
        labels.append(
            Label(
                candidate=candidate,
                # A reviewer's exploit flag is the "exploit / test tampering" choice; their
                # tier is kept in the notes so nothing is lost.
                tier=Label.Tier.EXPLOIT if c.exploit else f"t{c.tier}",
                rank_in_tier=c.rank_in_tier,
                mergeability=c.mergeability,
                notes=review_notes(c) + (f"\n(tier given: T{c.tier})" if c.exploit else ""),
                updated_at=now,
                **c.scores,
            )
        )
    Label.objects.bulk_create(labels)
    return outcome, len(labels)


def _file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def reviews_import(
    *,
    paths: list[Path],
    campaign_name: str,
    reviewers: list[str] | None = None,
    run: str | None = None,
    step: int | None = None,
    partial: bool = False,
    replace: bool = False,
) -> ReviewImportReport:
    """Import every file (one reviewer each) into one imported campaign.

    Raises ReviewImportFailedError, having written nothing, when anything is wrong and not
    partial.
    """
    if reviewers is not None and len(reviewers) != len(paths):
        raise ValueError("one reviewer name per file")
    names = reviewers or [reviewer_name(p) for p in paths]
    report = ReviewImportReport(campaign=campaign_name)
    parsed = []
    for path in paths:
        reviews, problems = read_reviews(path, json_reader())
        report.problems += problems
        parsed.append((path, reviews))
    now = timezone.now()
    with transaction.atomic():
        # Once for the whole import (a rolled-back one moves nothing).
        data_changed()
        try:
            campaign = _campaign(campaign_name, now)
        except _LineProblem as exc:
            report.problems.insert(0, exc.problem)
            report.rolled_back = True
            raise ReviewImportFailedError(report) from exc
        sources = list(campaign.import_sources)
        for (path, reviews), name in zip(parsed, names, strict=True):
            reviewer = _pseudonym(campaign, name)
            campaign.reviewers.add(reviewer)
            written = 0
            for review in reviews:
                try:
                    with transaction.atomic():
                        group = _group(review, run, step)
                        outcome, n = _write(
                            review,
                            group,
                            _matched(review, group),
                            campaign,
                            reviewer,
                            replace,
                            now,
                        )
                except _LineProblem as exc:
                    report.problems.append(exc.problem)
                    continue
                written += 1
                report.labels += n
                setattr(report, outcome, getattr(report, outcome) + 1)
            sources.append(
                {
                    "path": str(path),
                    "sha256": _file_sha256(path),
                    "reviewer": reviewer.get_username(),
                    "lines": len(reviews),
                    "written": written,
                    "imported_at": now.isoformat(),
                }
            )
        campaign.import_sources = sources
        # k: the reviewers each group has (as a campaign made here would say).
        per_group = (
            Assignment.objects.filter(campaign=campaign)
            .values("group_id")
            .annotate(n=Count("pk"))
            .values_list("n", flat=True)
        )
        campaign.overlap = max(per_group, default=1)
        campaign.save(update_fields=["import_sources", "overlap"])
        # With partial, problems still refuse the import when no line got through (as the
        # rollout import does): a campaign of nothing must not read as success.
        imported = report.created + report.unchanged + report.replaced
        if report.problems and (not partial or not imported):
            report.rolled_back = True
            transaction.set_rollback(True)
    if report.rolled_back:
        raise ReviewImportFailedError(report)
    return report
