"""Reads of rollout data, shaped for pages and the API."""

from __future__ import annotations

import json
from collections.abc import Collection
from typing import Any

from django.db.models import F, QuerySet

from grading.domain.compression import decompress
from grading.domain.redaction import identity_values
from grading.models import Attempt, Group, Trajectory, TrajectoryChunk


def trajectory_events(
    *, trajectory: Trajectory, start: int = 0, count: int = 100
) -> list[dict[str, Any]]:
    """Events [start, start+count) with their index; only the chunks holding them are read."""
    stop = start + max(count, 0)
    if stop <= start or start >= trajectory.event_count:
        return []
    chunks = (
        TrajectoryChunk.objects.annotate(end=F("first_event") + F("event_count"))
        .filter(trajectory=trajectory, first_event__lt=stop, end__gt=start)
        .order_by("seq")
    )
    events: list[dict[str, Any]] = []
    for chunk in chunks:
        lines = decompress(bytes(chunk.data)).splitlines()
        for offset, line in enumerate(lines):
            index = chunk.first_event + offset
            if start <= index < stop:
                event = json.loads(line)
                event["index"] = index
                events.append(event)
    return events


def group_identity_names(*, group_id: int) -> list[str]:
    """Every name that would tell who produced the group's attempts: their agent systems,
    models, families and short metadata strings, and the run's name (redacted for reviewers
    and for the grader; the catalogue covers names no metadata records). One query."""
    names: list[str] = []
    rows = Attempt.objects.filter(group_id=group_id).values_list(
        "agent_system", "agent_model", "agent_family", "agent_metadata", "group__step__run__name"
    )
    for system, model, family, metadata, run_name in rows:
        names += identity_values(system, model, family, metadata)
        if run_name and run_name not in names:
            names.append(run_name)
    return names


def group_with_attempts(*, group_id: int) -> Group:
    return (
        Group.objects.select_related("step__run", "task")
        .prefetch_related("attempts__patch", "attempts__trajectory")
        .get(pk=group_id)
    )


def groups_for_listing() -> QuerySet[Group]:
    return Group.objects.select_related("step__run", "task").order_by("-created_at")


def patch_siblings(*, attempt_ids: Collection[int]) -> dict[int, list[int]]:
    """For each attempt, the valid passing attempts of its group with the same patch (itself
    first, then by index): the attempts one judgement of that patch applies to. An attempt
    without a patch, or not passing, has only itself."""
    rows = list(
        Attempt.objects.passing()
        .filter(pk__in=attempt_ids)
        .values_list("pk", "group_id", "patch_id")
    )
    keys = {(g, p) for _, g, p in rows if p is not None}
    shared: dict[tuple[int, int], list[int]] = {}
    if keys:
        for pk, g, p in (
            Attempt.objects.passing()
            .filter(group_id__in={g for g, _ in keys}, patch_id__in={p for _, p in keys})
            .order_by("group_id", "index")
            .values_list("pk", "group_id", "patch_id")
        ):
            if (g, p) in keys:
                shared.setdefault((g, p), []).append(pk)
    out = {pk: [pk] for pk in attempt_ids}
    for pk, g, p in rows:
        out[pk] += [s for s in shared.get((g, p), []) if s != pk]
    return out
