"""From a stored payload to what the agreement page draws, and to each chart's CSV table.

The CSV of a chart holds exactly the numbers the chart was drawn from, so a download and the
picture can never disagree.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from review.analytics.charts import Chart, bars, ci_rows, heatmap, lines
from review.stats import interval_shown

STAT_LABELS = {
    "kappa": "Quadratic-weighted κ (grader vs consensus)",
    "raw_agreement": "Raw tier agreement",
    "alpha_humans": "Krippendorff α, humans (ordinal)",
    "kappa_humans": "Quadratic-weighted κ, human vs human",
    "alpha_with_grader": "Krippendorff α, humans + grader",
    "concordance": "Pairwise concordance",
    "tau_b": "Mean Kendall τ-b per group",
    "top1": "Top-1 agreement",
    "top1_chance": "Top-1 chance level",
}
CI_KEYS = ("estimate", "low", "high", "se", "n_tasks")
Table = tuple[list[str], list[list[Any]]]


def _ci_cols(prefix: str, ci: dict[str, Any] | None) -> list[Any]:
    ci = ci or {}
    return [ci.get(k) for k in CI_KEYS]


def _ci_header(stats: tuple[str, ...]) -> list[str]:
    return [f"{s}_{k}" for s in stats for k in CI_KEYS]


PER_CONFIG_STATS = ("kappa", "raw_agreement", "alpha_with_grader", "concordance", "tau_b", "top1")
STEP_STATS = ("kappa", "concordance", "top1", "top1_chance")
STABILITY_STATS = ("kappa", "alpha", "concordance", "tau_b", "top1")


def _headline(p: dict[str, Any]) -> Table:
    return ["statistic", *CI_KEYS], [[k, *_ci_cols(k, v)] for k, v in p["headline"].items()]


def _per_config(p: dict[str, Any]) -> Table:
    rows = [
        [c["name"], c["n_graded"], c["n_compared"]]
        + [x for s in PER_CONFIG_STATS for x in _ci_cols(s, c["stats"].get(s))]
        for c in p["per_config"]
    ]
    return ["grader_config", "n_graded", "n_compared", *_ci_header(PER_CONFIG_STATS)], rows


def _by_step(p: dict[str, Any]) -> Table:
    rows = [
        [s["run"], s["step"], s["n_candidates"], s["n_reviewed"]]
        + [x for k in STEP_STATS for x in _ci_cols(k, s["stats"].get(k))]
        for s in p["by_step"]
    ]
    return ["run", "step", "n_candidates", "n_reviewed", *_ci_header(STEP_STATS)], rows


def _confusion(p: dict[str, Any]) -> Table:
    m = p["confusion"]["matrix_with_exploit"]
    names = p["confusion"]["labels_with_exploit"]
    return ["grader_tier", *(f"human_{n.lower()}" for n in names)], [
        [names[i], *row] for i, row in enumerate(m)
    ]


def _stability(p: dict[str, Any]) -> Table:
    rows = [
        [s["a"], s["b"], s["n_candidates"], s["n_groups"]]
        + [x for k in STABILITY_STATS for x in _ci_cols(k, s["stats"].get(k))]
        for s in p["stability"]
    ]
    return ["series_a", "series_b", "n_candidates", "n_groups", *_ci_header(STABILITY_STATS)], rows


# Named, not taken from the first row, so a snapshot computed before the κ intervals existed
# still downloads with the same header (empty bounds) until it is recomputed.
CRITERIA_COLUMNS = ("criterion", "kappa", "low", "high", "se", "n", "n_tasks")


def _criteria(p: dict[str, Any]) -> Table:
    return list(CRITERIA_COLUMNS), [[r.get(c) for c in CRITERIA_COLUMNS] for r in p["criteria"]]


SENTINEL_COLUMNS = (
    "reviewer",
    "n_sentinels",
    "n_candidates",
    "n_flips",
    "flip_rate",
    "n_pairs",
    "rank_concordance",
)


def _sentinels(p: dict[str, Any]) -> Table:
    # In this order (a stored payload's keys come back sorted); payloads stored before
    # sentinels existed have none: an empty table.
    rows = p.get("sentinels", [])
    return list(SENTINEL_COLUMNS), [[r.get(c) for c in SENTINEL_COLUMNS] for r in rows]


def _dict_rows(items: list[dict[str, Any]]) -> Table:
    if not items:
        return [], []
    cols = list(items[0])
    return cols, [[r.get(c) for c in cols] for r in items]


CSV_TABLES: dict[str, Callable[[dict[str, Any]], Table]] = {
    "headline": _headline,
    "per_config": _per_config,
    "by_step": _by_step,
    "confusion": _confusion,
    "stability": _stability,
    "criteria": _criteria,
    "calibration": lambda p: _dict_rows(p["calibration"]["per_config"]),
    "calibration_curve": lambda p: _dict_rows(p["calibration"]["curve"]),
    "calibration_bins": lambda p: _dict_rows(p["calibration"]["empirical"]),
    "cost": lambda p: _dict_rows(p["cost"]),
    "lambda_cap": lambda p: _dict_rows(p["lambda_cap"]),
    "status_rates": lambda p: _dict_rows(p["status_rates"]),
    "sentinels": lambda p: _sentinels(p),
    "audit": lambda p: _audit(p),
    "claims": lambda p: _claims(p),
}

CLAIM_COLUMNS = ("grader_config", "criterion", "n_marked", "n_correct", "n_wrong", "n_unsure")


def _claims(p: dict[str, Any]) -> Table:
    """Claim precision rows; a snapshot computed before claims were marked has none."""
    rows = [
        [
            c["name"],
            r["criterion"],
            r["n_marked"],
            r["n_correct"],
            r["n_wrong"],
            r["n_unsure"],
            *_ci_cols("precision", r["precision"]),
        ]
        for c in p.get("claims", [])
        for r in c["rows"]
    ]
    return [*CLAIM_COLUMNS, *(f"precision_{k}" for k in CI_KEYS)], rows


def _audit(p: dict[str, Any]) -> Table:
    cols = [
        "side",
        "n_candidates",
        "n_tasks",
        "share_t1",
        "share_t2",
        "share_t3",
        "mean_quality",
        "n_with_quality",
        # Candidates in the shares but not in quality: every score left pre-filled, or none.
        "n_no_quality_prefilled",
        "n_no_quality_unscored",
    ]
    rows: list[list[Any]] = [
        [
            s["side"],
            s["n_candidates"],
            s["n_tasks"],
            *s["tier_share"].values(),
            s["mean_quality"],
            # A snapshot computed before these counts existed leaves them empty.
            s.get("n_with_quality"),
            s.get("no_quality", {}).get("prefilled"),
            s.get("no_quality", {}).get("unscored"),
        ]
        for s in p["sides"]
    ]
    w = p["win_rate"]
    cols += ["win_rate_a_over_b", "win_low", "win_high", "n_pairs", "n_shared_tasks"]
    for r in rows:
        r += [w["estimate"], w["low"], w["high"], p["n_pairs"], p["n_shared_tasks"]]
    return cols, rows


def audit_chart(p: dict[str, Any]) -> Chart:
    """Tier shares of the two sides as stacked horizontal bars."""
    c = Chart("Tier distribution of passing candidates", "audit", height=150)
    left, right = 160, c.width - 20
    for i, s in enumerate(p["sides"]):
        y, x = 20 + 50 * i, float(left)
        c.add("text", cls="label", x=left - 8, y=y + 22, text=s["side"][:24], anchor="end")
        for k, (tier, share) in enumerate(s["tier_share"].items()):
            w = round(share * (right - left), 2)
            if w > 0:
                c.add("rect", cls=f"bar t{k}", x=x, y=y, w=w, h=34, title=f"{tier}: {share:.1%}")
                if w > 40:
                    c.add(
                        "text",
                        cls="barin",
                        x=x + w / 2,
                        y=y + 22,
                        text=f"{tier} {share:.0%}",
                        anchor="middle",
                    )
            x += w
    return c


def _step_label(s: dict[str, Any], runs: int) -> str:
    return f"{s['run']}:{s['step']}" if runs > 1 else str(s["step"])


def agreement_charts(p: dict[str, Any]) -> dict[str, Chart]:
    steps = p["by_step"]
    n_runs = len({s["run"] for s in steps})
    labels = [_step_label(s, n_runs) for s in steps]

    def series(stat: str) -> tuple[list[float | None], list[tuple[float | None, float | None]]]:
        cis = [s["stats"][stat] for s in steps]
        # No band where a step has too few tasks for an interval (it would be zero-width).
        band = [
            (c["low"], c["high"])
            if interval_shown(c["n_tasks"], c["low"], c["high"])
            else (None, None)
            for c in cis
        ]
        return [c["estimate"] for c in cis], band

    kappa, kappa_band = series("kappa")
    conc, conc_band = series("concordance")
    cal = p["calibration"]
    cost = p["cost"]
    cost_labels = [r["tier"] for r in cost]
    lam = p["lambda_cap"]
    lam_runs = len({r["run"] for r in lam})
    return {
        "per_config": ci_rows(
            "κ with 95% CI per grader configuration",
            "per_config",
            [(c["name"], c["stats"]["kappa"]) for c in p["per_config"]],
        ),
        "per_config_concordance": ci_rows(
            "Pairwise concordance with 95% CI per grader configuration",
            "per_config",
            [(c["name"], c["stats"]["concordance"]) for c in p["per_config"]],
        ),
        "confusion": heatmap(
            "Confusion matrix (selected configuration)",
            "confusion",
            p["confusion"]["matrix_with_exploit"],
            p["confusion"]["labels_with_exploit"],
            row_labels=["grader T1", "grader T2", "grader T3", "grader: exploit suspected"],
        ),
        "by_step": lines(
            "Agreement over steps (95% CI bands)",
            "by_step",
            labels,
            [("κ", kappa, kappa_band), ("concordance", conc, conc_band)],
            y_range=(min([0.0, *[v for v, _ in kappa_band if v is not None]]), 1.0),
        ),
        "calibration": lines(
            "Calibration: P(tier | weighted score)",
            "calibration_curve",
            [f"{r['score']:.2f}" for r in cal["curve"]],
            [
                (name, [r[key] for r in cal["curve"]], None)
                for name, key in (("P(T1)", "p_t1"), ("P(T2)", "p_t2"), ("P(T3)", "p_t3"))
            ],
            x_values=[r["score"] for r in cal["curve"]],
            markers=False,
            dots=[
                (f"human {t.upper()} share", [(r["score"], r[t]) for r in cal["empirical"]])
                for t in ("t1", "t2", "t3")
            ],
        ),
        "cost_time": bars(
            "Median active time to first issue (s)",
            "cost",
            cost_labels,
            [r["first_issue_median_s"] for r in cost],
            unit=" s",
        ),
        "cost_fixes": bars(
            "Fix requests per candidate",
            "cost",
            cost_labels,
            [r["fix_requests_per_candidate"] for r in cost],
        ),
        "cost_merge": bars(
            "Share mergeable as is",
            "cost",
            cost_labels,
            [r["share_mergeable_as_is"] for r in cost],
        ),
        "lambda_cap": lines(
            "λ-cap frequency over steps",
            "lambda_cap",
            [f"{r['run']}:{r['step']}" if lam_runs > 1 else str(r["step"]) for r in lam],
            [("share of groups capped", [r["cap_frequency"] for r in lam], None)],
        ),
    }
