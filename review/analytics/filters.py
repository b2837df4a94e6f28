"""Dashboard filters: parsed from a query string, applied to groups and labels, hashed for
caching."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from django.contrib.auth import get_user_model
from django.db.models import Q, QuerySet

from grading.models import GraderConfig, Run, Step, Task
from grading.selectors.synthetic import synthetic_config_names, synthetic_run_names
from review.models import Assignment, Campaign

N_RESAMPLES = 2000
# What agreement statistics count: one candidate per distinct patch of a group (the default;
# identical patches were judged once) or every passing attempt (a label fans out to each).
UNIT_PATCH = "patch"
UNIT_ATTEMPT = "attempt"
UNITS = {UNIT_PATCH: "distinct patches", UNIT_ATTEMPT: "attempts"}


# The query parameters that are filters; a page or download may accept a few more of its own.
FILTER_PARAMS = ("run", "step", "repo", "campaign", "config", "reviewer", "unit")


def _int(value: str | None) -> int | None:
    if value is None or value.strip() == "":
        return None
    return int(value)


@dataclass(frozen=True)
class Filters:
    run: str | None = None
    step: int | None = None
    repo: str | None = None
    campaign: int | None = None
    config: int | None = None
    reviewer: int | None = None
    unit: str = UNIT_PATCH

    @classmethod
    def from_query(cls, query: Mapping[str, str]) -> tuple[Filters, list[str]]:
        """Filters from GET parameters; unparsable values are dropped and reported, not fatal."""
        errors: list[str] = []
        values: dict[str, Any] = {}
        for name in ("run", "repo"):
            raw = (query.get(name) or "").strip()
            values[name] = raw or None
        for name in ("step", "campaign", "config", "reviewer"):
            try:
                values[name] = _int(query.get(name))
            except ValueError:
                errors.append(f"{name} must be a whole number")
                values[name] = None
        unit = (query.get("unit") or "").strip() or UNIT_PATCH
        if unit not in UNITS:
            errors.append(f"unit must be one of {', '.join(UNITS)}")
            unit = UNIT_PATCH
        values["unit"] = unit
        return cls(**values), errors

    @property
    def unit_label(self) -> str:
        return UNITS[self.unit]

    def as_json(self) -> dict[str, Any]:
        return asdict(self)

    def query_string(self, **override: Any) -> str:
        from urllib.parse import urlencode

        items = {**self.as_json(), **override}
        # The default unit stays out of links, so existing links keep meaning the same slice.
        return urlencode(
            {
                k: v
                for k, v in items.items()
                if v is not None and not (k == "unit" and v == UNIT_PATCH)
            }
        )

    def group_q(self, prefix: str = "") -> Q:
        """Q restricting groups (under `prefix`, e.g. "attempt__group__") by run, step, repo and
        campaign."""
        q = Q()
        if self.run is not None:
            q &= Q(**{f"{prefix}step__run__name": self.run})
        if self.step is not None:
            q &= Q(**{f"{prefix}step__number": self.step})
        if self.repo is not None:
            q &= Q(**{f"{prefix}task__repo": self.repo})
        if self.campaign is not None:
            q &= Q(**{f"{prefix}campaigns__id": self.campaign})
        return q


def unknown_params(query: Mapping[str, str], *, also: tuple[str, ...] = ()) -> list[str]:
    """One error per query parameter that is neither a filter nor one of `also` (a misspelt
    filter would otherwise select everything without a word)."""
    known = (*FILTER_PARAMS, *also)
    return [
        f"unknown parameter {name!r} (known: {', '.join(known)})"
        for name in query
        if name not in known
    ]


def known_filters(filters: Filters) -> tuple[Filters, list[str]]:
    """The filters with every value that names nothing in the database dropped, and one error
    per dropped value: an unknown run or campaign would otherwise give empty figures (and a
    picker showing "all") without a word. A few indexed lookups, one per value set."""
    errors: list[str] = []
    drop: dict[str, Any] = {}
    if filters.run is not None and not Run.objects.filter(name=filters.run).exists():
        errors.append(f"unknown run {filters.run!r}")
        drop["run"] = None
    if filters.step is not None:
        steps = Step.objects.filter(number=filters.step)
        if "run" not in drop and filters.run is not None:
            steps = steps.filter(run__name=filters.run)
        if not steps.exists():
            where = f" in run {filters.run!r}" if "run" not in drop and filters.run else ""
            errors.append(f"unknown step {filters.step}{where}")
            drop["step"] = None
    if filters.repo is not None and not Task.objects.filter(repo=filters.repo).exists():
        errors.append(f"unknown repository {filters.repo!r}")
        drop["repo"] = None
    # A reviewer is someone with an assignment, as in the picker (`filter_options`).
    checks: tuple[tuple[str, str, QuerySet[Any], str], ...] = (
        ("campaign", "campaign", Campaign.objects.all(), "pk"),
        ("config", "grader configuration", GraderConfig.objects.all(), "pk"),
        ("reviewer", "reviewer", Assignment.objects.all(), "reviewer_id"),
    )
    for name, what, rows, column in checks:
        value = getattr(filters, name)
        if value is not None and not rows.filter(**{column: value}).exists():
            errors.append(f"unknown {what} {value}")
            drop[name] = None
    return (replace(filters, **drop) if drop else filters), errors


def audit_side_error(label: str, side: str) -> str | None:
    """Why an audit side ("run" or "run@step") names nothing, or None when it names a run (and
    that run has the step)."""
    run, at, step = side.partition("@")
    if at and not step.isdigit():
        return f"{label}: the step after @ must be a whole number, got {side!r}"
    if not Run.objects.filter(name=run).exists():
        return f"{label}: unknown run {run!r}"
    if at and not Step.objects.filter(run__name=run, number=int(step)).exists():
        return f"{label}: run {run!r} has no step {int(step)}"
    return None


@dataclass(frozen=True)
class SnapshotParams:
    kind: str
    filters: dict[str, Any]
    n_resamples: int = N_RESAMPLES
    extra: dict[str, Any] = field(default_factory=dict)

    def as_json(self) -> dict[str, Any]:
        return asdict(self)

    @property
    def key(self) -> str:
        canonical = json.dumps(self.as_json(), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(canonical.encode()).hexdigest()


@dataclass(frozen=True)
class FilterOptions:
    runs: list[str]
    steps: list[int]
    repos: list[str]
    campaigns: list[tuple[int, str]]
    configs: list[tuple[int, str]]
    reviewers: list[tuple[int, str]]
    # Marked "(synthetic)" in the pickers (grading.selectors.synthetic): runs made by
    # `demo --study`, and configurations that graded their groups.
    synthetic_runs: frozenset[str] = frozenset()
    synthetic_configs: frozenset[str] = frozenset()


def filter_options() -> FilterOptions:
    """Choices for the filter form: eight small queries, independent of the data size."""
    user_model = get_user_model()
    reviewer_ids = Assignment.objects.values("reviewer_id")
    return FilterOptions(
        runs=list(Run.objects.order_by("name").values_list("name", flat=True)),
        steps=list(Step.objects.order_by("number").values_list("number", flat=True).distinct()),
        repos=list(Task.objects.order_by("repo").values_list("repo", flat=True).distinct()),
        campaigns=[(c.pk, c.display_name) for c in Campaign.objects.order_by("name")],
        configs=list(GraderConfig.objects.order_by("name").values_list("id", "name")),
        reviewers=list(
            user_model.objects.filter(pk__in=reviewer_ids)
            .order_by("username")
            .values_list("id", "username")
        ),
        synthetic_runs=frozenset(synthetic_run_names()),
        synthetic_configs=frozenset(synthetic_config_names()),
    )


def audit_sides() -> list[str]:
    """Runs and run@step checkpoints, for the audit's two pickers."""
    sides: list[str] = []
    for run, numbers in _steps_by_run().items():
        sides.append(run)
        sides += [f"{run}@{n}" for n in numbers]
    return sides


def _steps_by_run() -> dict[str, list[int]]:
    out: dict[str, list[int]] = {}
    for run, number in Step.objects.order_by("run__name", "number").values_list(
        "run__name", "number"
    ):
        out.setdefault(run, []).append(number)
    return out
