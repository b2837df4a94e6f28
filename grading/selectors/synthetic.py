"""Which rollouts are synthetic: made by `manage.py demo --study`, never by an agent.

The one rule: a run whose metadata says `"synthetic": true` holds synthetic groups (its steps,
groups, attempts and everything graded or reviewed on them). Pages show a badge and exports a
manifest entry wherever such groups are in scope, so demo numbers are never read as results.
"""

from __future__ import annotations

from typing import Any

from django.db.models import Q

from grading.models import Group

SYNTHETIC_KEY = "synthetic"
SYNTHETIC_NOTE = (
    "synthetic data made by `manage.py demo --study` from the project's sample group: "
    "groups, reviews and grader runs for trying the product, not measurements"
)


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
