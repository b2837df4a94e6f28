"""Which rollouts are synthetic: made by `manage.py demo --study`, never by an agent.

The one rule: a run whose metadata says `"synthetic": true` holds synthetic groups (its steps,
groups, attempts and everything graded or reviewed on them). Pages show a badge and exports a
manifest entry wherever such groups are in scope, so demo numbers are never read as results.
"""

from __future__ import annotations

from typing import Any

from django.db.models import Q

from grading.models import GraderConfig, GraderRun, Group, Run

SYNTHETIC_KEY = "synthetic"
SYNTHETIC_NOTE = (
    "synthetic data made by `manage.py demo --study` from the project's sample group: "
    "groups, reviews and grader runs for trying the product, not measurements"
)


def run_is_synthetic(run: Run) -> bool:
    """The rule on a run already read (a page's group with `step__run` selected)."""
    return (run.metadata or {}).get(SYNTHETIC_KEY) is True


def synthetic_q(prefix: str = "") -> Q:
    """Groups (under `prefix`, e.g. "attempt__group__") of a synthetic run."""
    return Q(**{f"{prefix}step__run__metadata__{SYNTHETIC_KEY}": True})


def synthetic_group_count(*, scope: Q | None = None) -> int:
    """How many groups in `scope` (a Q on groups; None: all) are synthetic."""
    qs = Group.objects.filter(synthetic_q())
    if scope is not None:
        qs = qs.filter(scope)
    return qs.distinct().count()


def synthetic_manifest(*, scope: Q | None = None) -> dict[str, Any]:
    """The `synthetic` entry of an export's manifest: how many of its groups are synthetic."""
    n = synthetic_group_count(scope=scope)
    return {"groups": n, "note": SYNTHETIC_NOTE if n else None}


def synthetic_run_names() -> set[str]:
    """The names of the synthetic runs (the audit page compares runs by name)."""
    return set(
        Run.objects.filter(**{f"metadata__{SYNTHETIC_KEY}": True}).values_list("name", flat=True)
    )


def synthetic_config_names() -> set[str]:
    """Grader configurations that graded synthetic groups: their figures on the gate page are
    (at least partly) made of synthetic data."""
    graded = GraderRun.objects.filter(synthetic_q("group__")).values("config_id")
    return set(GraderConfig.objects.filter(pk__in=graded).values_list("name", flat=True))
