"""Staff pages to adjudicate disagreement flags: the queue and one case."""

from __future__ import annotations

from django.contrib import messages
from django.core.exceptions import ValidationError
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods, require_POST

from gagar_site.access import staff_required
from review.forms import AdjudicationForm
from review.models import Campaign, Disagreement
from review.selectors.adjudication import (
    adjudication_case,
    disagreement_counts,
    disagreement_queue,
)
from review.services.adjudication import disagreement_reopen, disagreement_resolve

STATUSES = {"open": Disagreement.Status.OPEN, "resolved": Disagreement.Status.RESOLVED, "all": ""}


@staff_required
def adjudication_list(request: HttpRequest) -> HttpResponse:
    status = request.GET.get("status", "open")
    if status not in STATUSES:
        status = "open"
    campaign = request.GET.get("campaign", "")
    campaign_id = int(campaign) if campaign.isdigit() else None
    flags = disagreement_queue(status=STATUSES[status] or None, campaign_id=campaign_id)
    return render(
        request,
        "review/staff/adjudication_list.html",
        {
            "flags": flags[:500],
            "status": status,
            "campaign_id": campaign_id,
            "campaigns": Campaign.objects.order_by("name"),
            "counts": disagreement_counts(),
        },
    )


@staff_required
@require_http_methods(["GET", "POST"])
def adjudication_detail(request: HttpRequest, disagreement_id: int) -> HttpResponse:
    try:
        case = adjudication_case(disagreement_id=disagreement_id)
    except Disagreement.DoesNotExist:
        raise Http404("No such flag.") from None
    form = AdjudicationForm(request.POST if request.method == "POST" else None)
    if request.method == "POST" and form.is_valid():
        try:
            disagreement_resolve(
                disagreement=case.flag,
                resolution=form.cleaned_data["resolution"],
                adjudicated_tier=form.cleaned_data["adjudicated_tier"],
                note=form.cleaned_data["note"],
                by=request.user,  # type: ignore[arg-type]  # staff_required: authenticated
            )
        except ValidationError as exc:
            form.add_error(None, exc)
        else:
            messages.success(request, "Resolved.")
            following = disagreement_queue().exclude(pk=case.flag.pk).first()
            if following is not None:
                return redirect("review:adjudication-detail", disagreement_id=following.pk)
            return redirect("review:adjudication-list")
    status = 400 if request.method == "POST" else 200
    return render(
        request,
        "review/staff/adjudication_detail.html",
        {"case": case, "form": form},
        status=status,
    )


@staff_required
@require_POST
def adjudication_reopen(request: HttpRequest, disagreement_id: int) -> HttpResponse:
    flag = Disagreement.objects.filter(pk=disagreement_id).first()
    if flag is None:
        raise Http404("No such flag.")
    disagreement_reopen(disagreement=flag)
    messages.success(request, "Reopened.")
    return redirect("review:adjudication-detail", disagreement_id=flag.pk)
