"""The agreement dashboard's statistics for one filter slice, as a JSON-ready payload.

Heavy (thousands of task bootstraps): only the Celery task calls `agreement_payload`; pages read
the stored result. Every number here comes from `review.stats`; this module chooses the inputs.
"""

from __future__ import annotations

import math
from collections import Counter
from typing import Any

import numpy as np

from review.analytics.arrays import (
    METHOD_EXPLOIT,
    Consensus,
    GraderView,
    config_view,
    consensus,
    human_keys,
    layout,
    rating_slots,
    series_view,
)
from review.analytics.calibration_curve import calibration_section
from review.analytics.frame import BoolArray, Frame, IntArray
from review.analytics.runs_dashboard import cost_rows, lambda_cap_rows, status_rate_rows
from review.claims import CLAIM_CRITERIA, CRITERION_NAMES
from review.models.reviewing import CRITERIA
from review.stats import (
    BootstrapCI,
    claim_precision,
    confusion_matrix,
    criterion_kappas_with_ci,
    headline_with_ci,
    kappa_with_ci,
    krippendorff_alpha_ordinal,
    rating_pairs,
    weighted_kappa,
)
from review.stats.consistency import Consistency, consistency, consistency_by_reviewer

SCHEMA = "gagar.dashboard.v1"
CONFIDENCE = 0.95
MAX_SERIES = 8  # stability compares at most this many (configuration, replica) series pairwise
SEED = 20240611  # fixed: the same data gives the same intervals on every recomputation


def num(value: float | None) -> float | None:
    """JSON-safe float: NaN and infinities become None."""
    if value is None or not math.isfinite(value):
        return None
    return float(value)


def ci_json(ci: BootstrapCI) -> dict[str, Any]:
    return {
        "estimate": num(ci.estimate),
        "low": num(ci.low),
        "high": num(ci.high),
        "se": num(ci.standard_error),
        "n_valid": ci.n_valid,
        "n_tasks": ci.n_clusters,
    }


class _Slice:
    """Candidate arrays shared by every bootstrap of one payload."""

    def __init__(self, frame: Frame) -> None:
        self.frame = frame
        self.cons: Consensus = consensus(frame)
        self.slots = rating_slots(frame)
        self.hkeys = human_keys(frame)

    def headline(self, idx: IntArray, view: GraderView, n_resamples: int) -> dict[str, Any]:
        """Grader (view) vs human consensus on candidates `idx`, CIs resampling their tasks."""
        f = self.frame
        _, cand_task = np.unique(f.task[idx], return_inverse=True)
        lay = layout(f.group[idx], cand_task.astype(np.int64), f.step_index[idx])
        cis = headline_with_ci(
            grader_tier=view.tier[idx],
            consensus_tier=self.cons.tier[idx],
            human_ratings=self.slots[:, idx],
            candidate_task=cand_task,
            human_keys=lay.pad(self.hkeys[idx]),
            grader_keys=lay.pad(view.key[idx]),
            group_task=lay.group_task,
            n_resamples=n_resamples,
            confidence=CONFIDENCE,
            seed=SEED,
        )
        return {name: ci_json(ci) for name, ci in cis.items()}


def _pair_stats(
    frame: Frame, a: GraderView, b: GraderView, n_resamples: int
) -> dict[str, Any] | None:
    """Stability of two grader series: b judged against a, on candidates both graded."""
    idx = np.flatnonzero(a.graded & b.graded)
    if not idx.size:
        return None
    _, cand_task = np.unique(frame.task[idx], return_inverse=True)
    lay = layout(frame.group[idx], cand_task.astype(np.int64), frame.step_index[idx])
    cis = headline_with_ci(
        grader_tier=b.tier[idx],
        consensus_tier=a.tier[idx],
        human_ratings=a.tier[idx][None, :],
        candidate_task=cand_task,
        human_keys=lay.pad(a.key[idx]),
        grader_keys=lay.pad(b.key[idx]),
        group_task=lay.group_task,
        n_resamples=n_resamples,
        seed=SEED,
    )
    keep = ("kappa", "raw_agreement", "concordance", "tau_b", "top1", "top1_chance")
    stats = {k: ci_json(cis[k]) for k in keep}
    # With one "human" row, alpha "with grader" is exactly alpha between the two series.
    stats["alpha"] = ci_json(cis["alpha_with_grader"])
    return {"n_candidates": int(idx.size), "n_groups": lay.n_groups, "stats": stats}


def _criteria(frame: Frame, view: GraderView, n_resamples: int) -> list[dict[str, Any]]:
    """κ per rubric criterion, grader (view) vs each reviewer's label, CIs resampling tasks."""
    grader = view.scores[frame.lab_pos]
    both = ~np.isnan(grader) & ~np.isnan(frame.lab_scores)
    # Resample only the tasks of labels that enter some criterion's κ: a task without a scored
    # pair (e.g. not graded by this configuration) would add empty draws, not information.
    rows = np.flatnonzero(both.any(axis=1))
    _, lab_task = np.unique(frame.task[frame.lab_pos[rows]], return_inverse=True)
    cis = criterion_kappas_with_ci(
        grader_scores=grader[rows],
        human_scores=frame.lab_scores[rows],
        item_task=lab_task.astype(np.int64),
        criteria=CRITERIA,
        n_resamples=n_resamples,
        confidence=CONFIDENCE,
        seed=SEED,
    )
    return [
        {
            "criterion": c,
            "kappa": num(cis[c].estimate),
            "low": num(cis[c].low),
            "high": num(cis[c].high),
            "se": num(cis[c].standard_error),
            "n": int(both[:, j].sum()),
            "n_tasks": cis[c].n_clusters,
            # Scores reviewers left as the tier pre-filled them: not in κ, said how many.
            "n_prefilled": int(frame.lab_prefilled[:, j].sum()),
        }
        for j, c in enumerate(CRITERIA)
    ]


def _human_kappa(frame: Frame, n_resamples: int) -> tuple[dict[str, Any], int]:
    """Quadratic κ between reviewers on tiers: Cohen's κ of two reviewers, pooled over reviewer
    pairs when there are more ("exploit" labels have no tier and drop out), CI resampling tasks.
    """
    a, b, pos = rating_pairs(frame.lab_pos, frame.lab_reviewer, frame.lab_tier)
    _, pair_task = np.unique(frame.task[pos], return_inverse=True)
    ci = kappa_with_ci(
        a=a,
        b=b,
        item_task=pair_task.astype(np.int64),
        n_resamples=n_resamples,
        confidence=CONFIDENCE,
        seed=SEED,
    )
    return ci_json(ci), int(a.size)


def _reasons(sl: _Slice, view: GraderView) -> dict[str, str]:
    """Why a headline number is undefined, in words for the page."""
    f, out = sl.frame, {}
    if len(f.reviewers) < 2:
        out["alpha_humans"] = f"needs two reviewers (this slice has {len(f.reviewers)})"
    else:
        rel = krippendorff_alpha_ordinal(sl.slots)
        if rel.value is None and rel.reason:
            out["alpha_humans"] = rel.reason
    kappa = weighted_kappa(view.tier, sl.cons.tier)
    if kappa is None:
        out["kappa"] = "no candidate both graded and reviewed"
    elif math.isnan(kappa):
        out["kappa"] = "undefined: grader and humans each used a single tier"
    if len(f.reviewers) < 2:
        out["kappa_humans"] = f"needs two reviewers (this slice has {len(f.reviewers)})"
    return out


def confusion_with_exploit(grader: GraderView, cons: Consensus) -> list[list[int]]:
    """4×4 counts, rows grader (T1–T3, exploit suspected), columns consensus (T1–T3, exploit).

    A grader that suspects an exploit still gives a tier; here the suspicion wins, as it does
    for the reviewer who labels "exploit" instead of a tier.
    """
    g = np.where(grader.exploit, 3, np.where(grader.graded, np.nan_to_num(grader.tier) - 1, -1))
    human_exploit = cons.method == METHOD_EXPLOIT
    has_tier = ~np.isnan(cons.tier)
    h = np.where(human_exploit, 3, np.where(has_tier, np.nan_to_num(cons.tier) - 1, -1))
    both = (g >= 0) & (h >= 0)
    cells = np.bincount((g[both] * 4 + h[both]).astype(np.int64), minlength=16)
    return cells.reshape(4, 4).tolist()


def _notes(frame: Frame, reviewed: BoolArray, selected: int | None) -> list[str]:
    """What the page says above the numbers when a slice cannot give all of them."""
    notes: list[str] = []
    if not frame.n:
        notes.append("No passing candidates match these filters.")
    elif not reviewed.any():
        notes.append("No submitted reviews in this slice yet: human statistics are empty.")
    if len(frame.reviewers) == 1:
        notes.append("A single reviewer: agreement among humans needs at least two.")
    if selected is None:
        notes.append("No succeeded grader run in this slice: grader statistics are empty.")
    n_imported = int(frame.lab_imported.sum())
    if n_imported:
        notes.append(
            f"{n_imported} of the {frame.lab_pos.size} reviews were imported from elsewhere: "
            "they record no time to find issues and no fix requests (absent, not zero)."
        )
    return notes


def _per_config(
    sl: _Slice, views: dict[int, GraderView], by_count: list[int], n_resamples: int
) -> list[dict[str, Any]]:
    rows = []
    for cid in by_count:
        idx = np.flatnonzero(views[cid].graded)
        rows.append(
            {
                "config_id": cid,
                "name": sl.frame.configs[cid],
                "n_graded": int(idx.size),
                "n_compared": int((views[cid].graded & ~np.isnan(sl.cons.tier)).sum()),
                "stats": sl.headline(idx, views[cid], n_resamples),
            }
        )
    return rows


def _headline(
    sl: _Slice,
    per_config: list[dict[str, Any]],
    selected: int | None,
    reviewed: BoolArray,
    n_resamples: int,
) -> tuple[dict[str, Any], int]:
    """The selected configuration's headline, with the humans-only numbers beside it, and the
    number of human rating pairs."""
    frame = sl.frame
    headline = next((c["stats"] for c in per_config if c["config_id"] == selected), None)
    humans_only = sl.headline(np.flatnonzero(reviewed), config_view(frame, -1), n_resamples)
    if headline is None:
        headline = {
            k: ci_json(
                BootstrapCI(None, None, None, None, CONFIDENCE, "percentile", n_resamples, 0, 0)
            )
            for k in humans_only
        }
    headline["alpha_humans"] = humans_only["alpha_humans"]
    headline["kappa_humans"], n_pairs = _human_kappa(frame, n_resamples)
    return headline, n_pairs


def _by_step(
    sl: _Slice, view: GraderView, reviewed: BoolArray, n_resamples: int
) -> list[dict[str, Any]]:
    frame, rows = sl.frame, []
    for s, (run, step) in enumerate(frame.steps):
        idx = np.flatnonzero(view.graded & (frame.step_index == s))
        if idx.size:
            rows.append(
                {
                    "run": run,
                    "step": step,
                    "n_candidates": int(idx.size),
                    "n_reviewed": int(reviewed[idx].sum()),
                    "stats": sl.headline(idx, view, n_resamples),
                }
            )
    return rows


def _stability(frame: Frame, n_resamples: int) -> list[dict[str, Any]]:
    """The grader against itself: every pair of the most frequent (configuration, replica)."""
    series = Counter(zip(frame.gr_config.tolist(), frame.gr_replica.tolist(), strict=True))
    top = sorted(s for s, _ in series.most_common(MAX_SERIES))
    s_views = {s: series_view(frame, *s) for s in top}
    rows = []
    for i, a in enumerate(top):
        for b in top[i + 1 :]:
            pair = _pair_stats(frame, s_views[a], s_views[b], n_resamples)
            if pair:
                label_a = f"{frame.configs[a[0]]} #{a[1]}"
                label_b = f"{frame.configs[b[0]]} #{b[1]}"
                rows.append({"a": label_a, "b": label_b, **pair})
    return rows


def _claims(frame: Frame, n_resamples: int) -> list[dict[str, Any]]:
    """Claim precision per grader configuration and criterion (and over all its claims), with
    95% intervals resampling tasks; "can't tell" marks are counted, not in the precision."""
    marks = np.asarray(frame.cl_mark, dtype=object)
    out = []
    for cid in sorted(set(frame.cl_config.tolist()), key=lambda c: frame.configs.get(c, "")):
        sel = frame.cl_config == cid
        per, overall = claim_precision(
            task=frame.cl_task[sel],
            group=frame.cl_criterion[sel],
            correct=marks[sel] == "correct",
            wrong=marks[sel] == "wrong",
            n_groups=len(CLAIM_CRITERIA),
            n_resamples=n_resamples,
            confidence=CONFIDENCE,
            seed=SEED,
        )
        rows = [
            {
                "criterion": CLAIM_CRITERIA[p.group] if p.group >= 0 else "all",
                "name": CRITERION_NAMES[CLAIM_CRITERIA[p.group]] if p.group >= 0 else "All claims",
                "n_marked": p.n_marked,
                "n_correct": p.n_correct,
                "n_wrong": p.n_wrong,
                "n_unsure": p.n_unsure,
                "precision": ci_json(p.precision),
            }
            for p in [*per, overall]
            if p.n_marked
        ]
        out.append({"config_id": cid, "name": frame.configs.get(cid, str(cid)), "rows": rows})
    return out


def _consistency_json(name: str, c: Consistency) -> dict[str, Any]:
    return {
        "reviewer": name,
        "n_sentinels": c.n_sentinels,
        "n_candidates": c.n_candidates,
        "n_flips": c.n_flips,
        "flip_rate": num(c.flip_rate),
        "n_pairs": c.n_pairs,
        "rank_concordance": num(c.rank_concordance),
    }


def sentinel_rows(frame: Frame) -> list[dict[str, Any]]:
    """Each reviewer's self-consistency on sentinels, then everyone pooled (when 2+)."""
    by = consistency_by_reviewer(frame.sentinels)
    rows = [
        _consistency_json(frame.sentinel_names.get(r, f"reviewer {r}"), c)
        for r, c in sorted(by.items(), key=lambda kv: frame.sentinel_names.get(kv[0], ""))
    ]
    if len(rows) > 1:
        rows.append(_consistency_json("all reviewers", consistency(frame.sentinels)))
    return rows


def agreement_payload(frame: Frame, *, filters: dict[str, Any], n_resamples: int) -> dict[str, Any]:
    sl = _Slice(frame)
    graded_counts = Counter(frame.gr_config.tolist())
    by_count = [c for c, _ in graded_counts.most_common()]
    wanted = filters.get("config")
    selected = wanted if wanted in frame.configs else (by_count[0] if by_count else None)
    views = {cid: config_view(frame, cid) for cid in by_count}
    reviewed = sl.cons.n_reviews > 0
    notes = _notes(frame, reviewed, selected)
    per_config = _per_config(sl, views, by_count, n_resamples)
    sel_view = views.get(selected) if selected is not None else None
    if sel_view is None:
        sel_view = config_view(frame, -1)  # nothing graded: every grader value is NaN
    headline, n_pairs = _headline(sl, per_config, selected, reviewed, n_resamples)
    by_step = _by_step(sl, sel_view, reviewed, n_resamples)
    stability = _stability(frame, n_resamples)

    lam_rows, lam_params = lambda_cap_rows(frame, selected)
    return {
        "schema": SCHEMA,
        "filters": filters,
        "n_resamples": n_resamples,
        "confidence": CONFIDENCE,
        # What a candidate is in every count and statistic below (Filters.unit).
        "unit": frame.unit,
        "counts": {
            "candidates": frame.n,
            "human_pairs": n_pairs,
            "reviewed": int(reviewed.sum()),
            "reviews": int(frame.lab_pos.size),
            "reviewers": len(frame.reviewers),
            "groups": int(np.unique(frame.group).size),
            "tasks": int(np.unique(frame.task).size),
            "graded": int(sel_view.graded.sum()),
            "compared": int((sel_view.graded & ~np.isnan(sl.cons.tier)).sum()),
            # Graded, and judged an exploit by the consensus: no tier, but in the matrix.
            "compared_exploit": int((sel_view.graded & (sl.cons.method == METHOD_EXPLOIT)).sum()),
        },
        "selected_config": (
            {"id": selected, "name": frame.configs[selected]} if selected is not None else None
        ),
        "headline": headline,
        "reasons": _reasons(sl, sel_view),
        "per_config": per_config,
        "by_step": by_step,
        "confusion": {
            "labels": [1, 2, 3],
            "matrix": confusion_matrix(sel_view.tier, sl.cons.tier).tolist(),
            # The chart's matrix: exploit candidates are a row and a column of their own
            # rather than dropped (κ above needs tiers, so it uses the tier-only matrix).
            "labels_with_exploit": ["T1", "T2", "T3", "exploit"],
            "matrix_with_exploit": confusion_with_exploit(sel_view, sl.cons),
        },
        "criteria": _criteria(frame, sel_view, n_resamples),
        "stability": stability,
        "calibration": calibration_section(frame, views, sl.cons.tier, selected),
        "cost": cost_rows(frame),
        "lambda_cap": lam_rows,
        "lambda_params": lam_params,
        "status_rates": status_rate_rows(frame, sel_view if selected is not None else None),
        "claims": _claims(frame, n_resamples),
        "sentinels": sentinel_rows(frame),
        "notes": notes,
    }
