"""Staff pages to adjudicate disagreement flags: the queue and one case."""

from __future__ import annotations

from django.contrib import messages
from django.core.exceptions import ValidationError
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_http_methods, require_POST

from gagar_site.access import staff_required
from review.forms import AdjudicationForm
from review.models import Campaign, Disagreement
from review.selectors.adjudication import (
    AdjudicationCase,
    adjudication_case,
    disagreement_counts,
    disagreement_queue,
)
from review.services.adjudication import disagreement_reopen, disagreement_resolve
from review.views._common import wants_json

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
    if request.method == "POST" and case.flag.status == Disagreement.Status.RESOLVED:
        # Resolved meanwhile (another tab, another adjudicator): said whatever was posted, since
        # the page then shows the outcome, not the form and its errors.
        return _refused(request, case, form, [already_resolved(case.flag)], status=409)
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
            # A resolution that won the race since the case was read is a conflict, too.
            case.flag.refresh_from_db()
            resolved = case.flag.status == Disagreement.Status.RESOLVED
            if resolved:
                return _refused(request, case, form, [already_resolved(case.flag)], status=409)
            form.add_error(None, exc)
            return _refused(request, case, form, exc.messages, status=400)
        following = disagreement_queue().exclude(pk=case.flag.pk).first()
        url = (
            reverse("review:adjudication-detail", args=[following.pk])
            if following is not None
            else reverse("review:adjudication-list")
        )
        if wants_json(request):
            return JsonResponse({"ok": True, "next": url})
        messages.success(request, "Resolved.")
        return redirect(url)
    if request.method == "POST":
        problems = [f"{field}: {e}" for field, errs in form.errors.items() for e in errs]
        return _refused(request, case, form, problems, status=400)
    return render(request, "review/staff/adjudication_detail.html", {"case": case, "form": form})


def already_resolved(flag: Disagreement) -> str:
    by = flag.resolved_by.get_username() if flag.resolved_by else "someone"
    when = f" at {flag.resolved_at:%Y-%m-%d %H:%M}" if flag.resolved_at else ""
    return (
        f"Flag #{flag.pk} is already resolved ({flag.get_resolution_display()}, by {by}{when}); "
        "nothing was changed. Reopen it to change the outcome."
    )


def _refused(
    request: HttpRequest,
    case: AdjudicationCase,
    form: AdjudicationForm,
    problems: list[str],
    *,
    status: int,
) -> HttpResponse:
    if wants_json(request):
        return JsonResponse({"ok": False, "problems": problems}, status=status)
    if status == 409:
        form.add_error(None, problems)
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
