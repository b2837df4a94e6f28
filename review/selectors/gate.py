"""Human labels of campaigns as the grader gate reads them, and a configuration's grades beside.

A campaign's submitted (or imported) labels become the analysis grader's plain tasks
(`devset.Task`): one per task, its candidates the distinct passing patches of the campaign's
groups (keyed by the SHA-256 of the patch text, as the shared review files are), each reviewer's
(tier, rank in tier) on them. An `exploit` label counts as T3 (the rubric's "would not merge"); a
label without a rank is rank 1 (unordered within its tier).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from grading.grader.analysis.devset import Label, Task, sha256_text
from grading.models import Attempt, CandidateGrade, GraderConfig, GraderRun, Group
from grading.models import Task as TaskRow
from review.models import Assignment, Campaign
from review.models.reviewing import Label as LabelRow

_TIERS = {"t1": 1, "t2": 2, "t3": 3, "exploit": 3}


class GateInputError(ValueError):
    """Campaigns that cannot be measured against (unknown, or without labels)."""


def campaigns_named(*, names: Sequence[str]) -> list[Campaign]:
    found = {c.name: c for c in Campaign.objects.filter(name__in=names)}
    missing = [n for n in names if n not in found]
    if missing:
        known = ", ".join(sorted(Campaign.objects.values_list("name", flat=True))) or "none"
        raise GateInputError(f"unknown campaign(s): {', '.join(missing)} (known: {known})")
    return [found[n] for n in names]


def campaign_tasks(*, campaigns: Iterable[Campaign]) -> list[Task]:
    """Every task of the campaigns with its distinct passing patches and reviewers' labels."""
    ids = [c.pk for c in campaigns]
    attempts = (
        Attempt.objects.filter(group__campaigns__in=ids, status=Attempt.Status.VALID)
        .filter(test_reward__gt=0, patch__isnull=False)
        .select_related("patch", "group__task__gold_patch", "group__task__test_patch")
        .distinct()
        .order_by("group_id", "index")
    )
    tasks: dict[str, TaskRow] = {}
    patches: dict[str, dict[str, str]] = {}
    counts: dict[str, dict[str, int]] = {}
    for a in attempts:
        t = a.group.task
        tasks.setdefault(t.external_id, t)
        assert a.patch is not None
        text = a.patch.text
        sha = sha256_text(text)
        patches.setdefault(t.external_id, {})[sha] = text
        counts.setdefault(t.external_id, {}).setdefault(sha, 0)
        counts[t.external_id][sha] += 1
    labels: dict[str, dict[str, dict[str, Label]]] = {}
    rows = (
        LabelRow.objects.filter(
            candidate__assignment__campaign__in=ids,
            candidate__assignment__status=Assignment.Status.SUBMITTED,
            candidate__assignment__sentinel=False,
            tier__in=list(_TIERS),
        )
        .select_related(
            "candidate__attempt__patch",
            "candidate__attempt__group__task",
            "candidate__assignment__reviewer",
        )
        .order_by("candidate__assignment__submitted_at", "pk")
    )
    for row in rows:
        attempt = row.candidate.attempt
        if attempt.patch is None:
            continue
        task_id = attempt.group.task.external_id
        sha = sha256_text(attempt.patch.text)
        if sha not in patches.get(task_id, {}):
            continue  # a failing attempt shown as context: not a candidate
        reviewer = row.candidate.assignment.reviewer.get_username()
        by_sha = labels.setdefault(task_id, {}).setdefault(reviewer, {})
        # The first submitted label of a patch counts (the same patch in two attempts).
        by_sha.setdefault(sha, Label(_TIERS[row.tier], row.rank_in_tier or 1))
    out = []
    for task_id in sorted(tasks):
        if task_id not in labels:
            continue
        t = tasks[task_id]
        out.append(
            Task(
                instance_id=task_id,
                repo=t.repo,
                base_commit=t.base_commit,
                problem_statement=t.problem_statement,
                reference_patch=t.gold_patch.text if t.gold_patch is not None else "",
                test_patch=t.test_patch.text if t.test_patch is not None else "",
                test_names=tuple(map(str, [*(t.fail_to_pass or []), *(t.pass_to_pass or [])])),
                patches=patches[task_id],
                submissions=counts[task_id],
                labels=labels[task_id],
            )
        )
    if not out:
        raise GateInputError("the campaign(s) hold no submitted tier labels on passing patches")
    return out


def config_grades(
    *, config: GraderConfig, campaigns: Iterable[Campaign]
) -> dict[tuple[str, str], tuple[int, int]]:
    """The configuration's (tier, rank in tier) per (task, patch SHA-256), from its succeeded
    runs on the campaigns' groups (the lowest replica of each group)."""
    ids = [c.pk for c in campaigns]
    runs = (
        GraderRun.objects.filter(
            config=config, status=GraderRun.Status.SUCCEEDED, group__campaigns__in=ids
        )
        .distinct()
        .order_by("group_id", "replica")
    )
    first: dict[int, int] = {}
    for run in runs:
        first.setdefault(run.group_id, run.pk)
    grades = CandidateGrade.objects.filter(run_id__in=list(first.values())).select_related(
        "attempt__patch", "attempt__group__task"
    )
    out: dict[tuple[str, str], tuple[int, int]] = {}
    for g in grades:
        if g.attempt.patch is None:
            continue
        key = (g.attempt.group.task.external_id, sha256_text(g.attempt.patch.text))
        out.setdefault(key, (g.tier, g.rank_in_tier))
    return out


def campaign_groups_ungraded(*, config: GraderConfig, campaigns: Iterable[Campaign]) -> list[int]:
    """Groups of the campaigns without a succeeded run of the configuration."""
    ids = [c.pk for c in campaigns]
    groups = set(Group.objects.filter(campaigns__in=ids).values_list("pk", flat=True))
    done = set(
        GraderRun.objects.filter(
            config=config, status=GraderRun.Status.SUCCEEDED, group_id__in=groups
        ).values_list("group_id", flat=True)
    )
    return sorted(groups - done)
