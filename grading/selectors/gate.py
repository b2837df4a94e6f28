"""Reads of the grader gate: a configuration's current fit and whether it is approved for training.

A configuration is approved when its newest gate decision (`GraderApproval`) passed and was taken
on the fit it grades with now: an analysis configuration refitted after its approval is not
approved until it passes again. Other backends have no fit (the version is "").
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from django.db.models import Q

from grading.grader.analysis.model import load_default_fit
from grading.models import GraderApproval, GraderConfig, GraderFit, GraderRun, Group, Run


@dataclass(frozen=True)
class ApprovalState:
    config: str
    approved: bool
    reason: str  # why, in a few words, for API answers and dashboards
    basis: str = ""
    fit_version: str = ""
    decided_at: str | None = None

    def as_json(self) -> dict[str, Any]:
        return {
            "config": self.config,
            "approved": self.approved,
            "reason": self.reason,
            "basis": self.basis,
            "fit_version": self.fit_version,
            "decided_at": self.decided_at,
        }


def grader_fit_current(*, config: GraderConfig) -> GraderFit | None:
    """The stored fit the configuration grades with (None: the shipped default, or no fit)."""
    if config.backend != GraderConfig.Backend.ANALYSIS:
        return None
    return config.fits.order_by("-created_at", "-pk").first()


def grader_fit_version(*, config: GraderConfig) -> str:
    if config.backend != GraderConfig.Backend.ANALYSIS:
        return ""
    fit = grader_fit_current(config=config)
    return fit.version if fit is not None else load_default_fit().version


def grader_fit_artefact(*, config: GraderConfig, version: str) -> dict[str, Any] | None:
    """The artefact a run's verdict was made with (`GraderRun.fit_version`), for exports."""
    if not version:
        return None
    stored = GraderFit.objects.filter(config=config, version=version).first()
    if stored is not None:
        return dict(stored.fit)
    shipped = load_default_fit()
    return shipped.to_dict() if shipped.version == version else None


def grader_fit_summary(*, config: GraderConfig, version: str) -> dict[str, Any] | None:
    """What an export's manifest says about the fit that made a verdict: its version, the stored
    `GraderFit` id (None for the shipped fit), where it came from, what it was fitted on and its
    held-out (leave-one-task-out) figures. None for configurations without a fit."""
    if not version:
        return None
    stored = GraderFit.objects.filter(config=config, version=version).first()
    if stored is not None:
        artefact: dict[str, Any] = dict(stored.fit)
        source, fit_id = "stored", stored.pk
    else:
        shipped = load_default_fit()
        if shipped.version != version:  # a fit deleted since: say so rather than guess
            return {"version": version, "id": None, "source": "unknown", "held_out": None,
                    "trained_on": None, "current": False}  # fmt: skip
        artefact, source, fit_id = shipped.to_dict(), "shipped", None
    return {
        "version": version,
        "id": fit_id,
        "source": source,
        "held_out": artefact.get("held_out") or None,
        "trained_on": artefact.get("trained_on") or None,
        "current": version == grader_fit_version(config=config),
    }


def graders_of_groups(*, groups: Q, config: GraderConfig | None = None) -> list[dict[str, Any]]:
    """Each grader configuration whose succeeded runs graded the groups `groups` selects (a Q
    on Group), once per fit version it graded them with: the configuration, how many groups
    and runs, the fit (`grader_fit_summary`) and its approval now (`approved_fit` says whether
    the approval is for that very fit). For export manifests."""
    runs = GraderRun.objects.filter(status=GraderRun.Status.SUCCEEDED, group__in=_groups(groups))
    if config is not None:
        runs = runs.filter(config=config)
    seen: dict[tuple[int, str], dict[str, set[int]]] = {}
    for config_id, version, group_id, run_id in runs.values_list(
        "config_id", "fit_version", "group_id", "pk"
    ).order_by():
        entry = seen.setdefault((config_id, version), {"groups": set(), "runs": set()})
        entry["groups"].add(group_id)
        entry["runs"].add(run_id)
    configs = GraderConfig.objects.in_bulk({c for c, _ in seen})
    states = {pk: grader_approval_state(config=c) for pk, c in configs.items()}
    out = []
    for (config_id, version), entry in sorted(
        seen.items(), key=lambda kv: (configs[kv[0][0]].name, kv[0][1])
    ):
        cfg, state = configs[config_id], states[config_id]
        out.append(
            {
                "grader_config": cfg.name,
                "backend": cfg.backend,
                "fit_version": version or None,
                "fit": grader_fit_summary(config=cfg, version=version),
                "groups": len(entry["groups"]),
                "runs": len(entry["runs"]),
                "approval": state.as_json(),
                "approved_fit": state.approved and state.fit_version == version,
            }
        )
    return out


def _groups(groups: Q) -> Any:
    return Group.objects.filter(groups).values("pk")


def grader_approval_state(*, config: GraderConfig) -> ApprovalState:
    decision = GraderApproval.objects.filter(config=config).order_by("-created_at", "-pk").first()
    if decision is None:
        return ApprovalState(config.name, False, "never evaluated against people")
    current = grader_fit_version(config=config)
    state = ApprovalState(
        config.name, False, "", decision.basis, decision.fit_version,
        decision.created_at.isoformat(),
    )  # fmt: skip
    if decision.fit_version != current:
        reason = f"approved fit {decision.fit_version or '—'} is not the current fit {current}"
        return ApprovalState(**{**state.__dict__, "reason": reason})
    if not decision.passed:
        reason = "did not pass: " + "; ".join(decision.failures or ["thresholds not met"])
        return ApprovalState(**{**state.__dict__, "reason": reason})
    basis = GraderApproval.Basis(decision.basis).label
    return ApprovalState(**{**state.__dict__, "approved": True, "reason": f"passed on {basis}"})


def grader_approval_states(*, configs: Iterable[GraderConfig]) -> dict[int, ApprovalState]:
    return {c.pk: grader_approval_state(config=c) for c in configs}


def grader_approvals_recent(*, limit: int = 50) -> list[GraderApproval]:
    """The newest gate decisions, for the dashboard table."""
    return list(GraderApproval.objects.select_related("config").order_by("-created_at")[:limit])


def run_grader_config(*, group_ids: Iterable[int]) -> GraderConfig | None:
    """The configuration pinned to the groups' training run (None: unpinned, or several runs)."""
    runs = list(
        Run.objects.filter(steps__groups__pk__in=list(group_ids))
        .select_related("grader_config")
        .distinct()
    )
    return runs[0].grader_config if len(runs) == 1 else None


@dataclass(frozen=True)
class GateRow:
    """One gate decision as the dashboard lists it."""

    config: str
    passed: bool
    basis: str
    fit_version: str
    campaigns: list[str]
    figures: dict[str, dict[str, float | None]]  # statistic -> estimate, low, high
    thresholds: dict[str, float]
    failures: list[str]
    decided_by: str
    decided_at: str


def grader_gate_overview(*, limit: int = 50) -> tuple[list[ApprovalState], list[GateRow]]:
    """Every configuration's approval state, and the newest gate decisions with their figures."""
    configs = list(GraderConfig.objects.order_by("name"))
    rows = [
        GateRow(
            a.config.name,
            a.passed,
            GraderApproval.Basis(a.basis).label,
            a.fit_version,
            list(a.campaigns or []),
            dict((a.figures or {}).get("stats", {})),
            dict(a.thresholds or {}),
            list(a.failures or []),
            a.decided_by,
            a.created_at.isoformat(timespec="minutes"),
        )
        for a in grader_approvals_recent(limit=limit)
    ]
    return [grader_approval_state(config=c) for c in configs], rows
