"""Staff dashboards (method §7): agreement, audit of two runs, and label/data-package downloads.

Views parse filters, check access, call one selector or service and shape the output. Pages read
cached snapshots only; the statistics are computed by `review.tasks`.
"""

from __future__ import annotations

import csv
from datetime import datetime
from typing import Any, cast

from django.http import FileResponse, Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils import timezone
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET

from gagar_site.access import staff_required
from grading.domain.hostile_text import csv_cell
from grading.selectors.gate import grader_gate_overview
from grading.selectors.synthetic import synthetic_config_names, synthetic_group_count
from grading.services.exports import FORMATS
from review.analytics.archive import export_archive
from review.analytics.audit import HUMANS
from review.analytics.filters import (
    Filters,
    SnapshotParams,
    audit_side_error,
    audit_sides,
    filter_options,
    known_filters,
    unknown_params,
)
from review.analytics.presenters import CSV_TABLES, STAT_LABELS, agreement_charts, audit_chart
from review.analytics.snapshots import snapshot_for_page, snapshot_payload
from review.models import StatsSnapshot
from review.selectors.reviewing import synthetic_campaign_names

HEADLINE_ORDER = (
    "kappa",
    "raw_agreement",
    "concordance",
    "tau_b",
    "top1",
    "alpha_humans",
    "kappa_humans",
    "alpha_with_grader",
)


GATE_STATS = ("kappa", "concordance", "t3_recall", "exact", "alpha", "top1")


def _checked_filters(
    request: HttpRequest, *, also: tuple[str, ...] = ()
) -> tuple[Filters, list[str]]:
    """The request's filters, every unparsable or unknown value dropped and reported (and every
    parameter that is no filter nor one of `also`)."""
    filters, errors = Filters.from_query(request.GET)
    filters, unknown = known_filters(filters)
    return filters, [*errors, *unknown, *unknown_params(request.GET, also=also)]


def _bad_request(errors: list[str]) -> HttpResponse:
    return HttpResponse(
        "".join(f"{e}\n" for e in errors), status=400, content_type="text/plain; charset=utf-8"
    )


def _agreement_params(
    request: HttpRequest, *, also: tuple[str, ...] = ()
) -> tuple[Filters, SnapshotParams, list[str]]:
    filters, errors = _checked_filters(request, also=also)
    return (
        filters,
        SnapshotParams(kind=StatsSnapshot.Kind.AGREEMENT, filters=filters.as_json()),
        errors,
    )


@never_cache
@require_GET
@staff_required
def agreement(request: HttpRequest) -> HttpResponse:
    filters, params, errors = _agreement_params(request)
    state = snapshot_for_page(params=params)
    payload: dict[str, Any] | None = state.snapshot.payload if state.snapshot else None
    context: dict[str, Any] = {
        "filters": filters,
        "errors": errors,
        "options": filter_options(),
        "state": state,
        "payload": payload,
        "query": filters.query_string(),
        "n_synthetic": synthetic_group_count(scope=filters.group_q()),
    }
    if payload is not None:
        head = payload["headline"]
        context["cards"] = [
            {
                "key": k,
                "label": STAT_LABELS[k],
                "ci": head.get(k),
                "reason": payload["reasons"].get(k),
            }
            for k in HEADLINE_ORDER
        ]
        context["chance"] = head.get("top1_chance")
        context["charts"] = agreement_charts(payload)
    return render(request, "dashboards/agreement.html", context)


@never_cache
@require_GET
@staff_required
def chart_csv(request: HttpRequest, chart: str) -> HttpResponse:
    if chart not in CSV_TABLES:
        raise Http404("No such chart.")
    if request.GET.get("kind") == StatsSnapshot.Kind.AUDIT:
        audit_params, errors = _audit_params(request)
        if errors:
            return _bad_request(errors)
        if audit_params is None:
            raise Http404("Choose two runs.")
        params = audit_params
    else:
        _, params, errors = _agreement_params(request, also=("kind",))
        if errors:
            # A CSV of a slice other than the one asked for would pass for it.
            return _bad_request(errors)
    payload = snapshot_payload(params=params)
    if payload is None:
        response = HttpResponse(
            "These statistics are still being computed; try again shortly.\n",
            status=503,
            content_type="text/plain",
        )
        response["Retry-After"] = "10"
        return response
    columns, rows = CSV_TABLES[chart](payload)
    response = HttpResponse(content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{chart}.csv"'
    writer = csv.writer(response)
    writer.writerow([csv_cell(c) for c in columns])
    writer.writerows([csv_cell("" if v is None else v) for v in row] for row in rows)
    return response


def _audit_params(request: HttpRequest) -> tuple[SnapshotParams | None, list[str]]:
    """The audit's parameters (None until both sides are chosen), and why they name nothing:
    an unknown run, step or grader configuration is said, not drawn as an empty audit."""
    a, b = request.GET.get("a", "").strip(), request.GET.get("b", "").strip()
    source = request.GET.get("source", HUMANS).strip() or HUMANS
    errors: list[str] = []
    for label, side in (("A", a), ("B", b)):
        error = audit_side_error(label, side) if side else None
        if error:
            errors.append(error)
    if source != HUMANS and not source.isdigit():
        errors.append(f"judged by: {source!r} is neither humans nor a grader configuration id")
    elif source != HUMANS:
        errors += [f"judged by: {e}" for e in known_filters(Filters(config=int(source)))[1]]
    if errors or not a or not b:
        return None, errors
    return (
        SnapshotParams(
            kind=StatsSnapshot.Kind.AUDIT,
            filters=Filters().as_json(),
            extra={"a": a, "b": b, "source": source},
        ),
        [],
    )


@never_cache
@require_GET
@staff_required
def audit(request: HttpRequest) -> HttpResponse:
    params, errors = _audit_params(request)
    a, b = request.GET.get("a", ""), request.GET.get("b", "")
    options = filter_options()
    synthetic_runs = options.synthetic_runs
    # A side is a run or "run@step": synthetic when its run is (grading.selectors.synthetic).
    sides = [(s, s.partition("@")[0] in synthetic_runs) for s in audit_sides()]
    context: dict[str, Any] = {
        "sides": sides,
        "synthetic_sides": [s for s in (a, b) if s and s.partition("@")[0] in synthetic_runs],
        "configs": options.configs,
        "synthetic_configs": options.synthetic_configs,
        "a": a,
        "b": b,
        "source": request.GET.get("source", HUMANS),
        "params": params,
        "errors": errors,
        "query": request.GET.urlencode(),
    }
    if params is not None:
        state = snapshot_for_page(params=params)
        payload = state.snapshot.payload if state.snapshot else None
        context.update(state=state, payload=payload)
        if payload is not None:
            context["chart"] = audit_chart(payload)
    return render(request, "dashboards/audit.html", context)


def _gate_cell(
    figure: dict[str, Any], threshold: float | None
) -> tuple[dict[str, Any], float | None, bool]:
    """A gate figure, the threshold it had to meet (None: none) and whether it fell short."""
    estimate = figure.get("estimate")
    missed = threshold is not None and (estimate is None or estimate < threshold)
    return figure, threshold, missed


def _when(iso: str | None) -> datetime | None:
    # The gate's selectors speak ISO strings (the API's form); the page shows minutes.
    return datetime.fromisoformat(iso) if iso else None


@never_cache
@require_GET
@staff_required
def gate(request: HttpRequest) -> HttpResponse:
    states, decisions = grader_gate_overview()
    # A configuration that graded synthetic groups, or a decision measured on a campaign that
    # holds some, is badged: its figures are (partly) demo data.
    configs = synthetic_config_names()
    campaigns = synthetic_campaign_names(names={c for d in decisions for c in d.campaigns})
    rows = [
        (
            d,
            [_gate_cell(d.figures.get(s) or {}, d.thresholds.get(s)) for s in GATE_STATS],
            [(k, v) for k, v in d.thresholds.items() if k not in GATE_STATS],
            d.config in configs or any(c in campaigns for c in d.campaigns),
            _when(d.decided_at),
        )
        for d in decisions
    ]
    state_rows = [(s, s.config in configs, _when(s.decided_at)) for s in states]
    return render(
        request,
        "dashboards/gate.html",
        {
            "states": state_rows,
            "rows": rows,
            "stats": GATE_STATS,
            "any_synthetic": any(s[1] for s in state_rows) or any(r[3] for r in rows),
        },
    )


@never_cache
@require_GET
@staff_required
def export(request: HttpRequest) -> HttpResponse:
    filters, errors = _checked_filters(request, also=("format",))
    return render(
        request,
        "dashboards/export.html",
        {
            "filters": filters,
            "errors": errors,
            "options": filter_options(),
            "formats": FORMATS,
            "n_synthetic": synthetic_group_count(scope=filters.group_q()),
        },
    )


@require_GET
@staff_required
def export_download(request: HttpRequest, what: str) -> HttpResponse:
    """A zip of the export and its manifest, built in a temporary directory and streamed from
    disk (the writers hold one batch in memory; the response reads the file in blocks)."""
    if what not in ("labels", "package"):
        raise Http404("No such export.")
    fmt = request.GET.get("format", "csv")
    filters, errors = _checked_filters(request, also=("format",))
    if fmt not in FORMATS:
        return _bad_request([f"unknown format {fmt!r} (formats: {', '.join(FORMATS)})", *errors])
    if errors:
        # An export of another slice than the one asked for (or of nothing) would pass for it.
        return _bad_request(errors)
    archive = export_archive(what=what, fmt=fmt, filters=filters)
    name = f"gagar-{what}-{timezone.now():%Y%m%d-%H%M%S}.zip"
    response = FileResponse(
        archive, as_attachment=True, filename=name, content_type="application/zip"
    )
    # staff_required is typed for HttpResponse; a FileResponse streams the file in blocks.
    return cast(HttpResponse, response)
