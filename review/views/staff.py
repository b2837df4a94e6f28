"""Staff pages: create a campaign from a filter of groups, follow its progress."""

from __future__ import annotations

from django.contrib import messages
from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render

from gagar_site.access import staff_required
from review.forms import CampaignForm
from review.models import Campaign
from review.selectors.reviewing import campaign_overview, campaigns_for_staff
from review.services.campaigns import campaign_create, reviewers_check


@staff_required
def campaign_list(request: HttpRequest) -> HttpResponse:
    campaigns = campaigns_for_staff()
    return render(request, "review/staff/list.html", {"campaigns": campaigns})


@staff_required
def campaign_new(request: HttpRequest) -> HttpResponse:
    form = CampaignForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        d = form.cleaned_data
        try:
            reviewers_check(
                reviewers=d["reviewers"], overlap=d["overlap"], allow_staff=d["allow_staff"]
            )
            campaign = campaign_create(
                name=d["name"],
                created_by=request.user if request.user.is_authenticated else None,
                reviewers=d["reviewers"],
                filters=form.filters(),
                overlap=d["overlap"],
                show_trajectories=d["show_trajectories"],
                show_test_output=d["show_test_output"],
                rubric_required=d["rubric_required"],
                show_reference=d["show_reference"],
                reveal_policy=d["reveal_policy"],
                lease_minutes=d["lease_minutes"],
                fingerprint_patterns=d["fingerprint_patterns"],
                sentinel_rate=d["sentinel_rate"],
                queue_order=d["queue_order"],
                impact_config=d["impact_config"],
            )
        except ValidationError as exc:
            # Shown beside the input it is about (reviewers, overlap), else above the form.
            code = getattr(exc, "code", None)
            field = code if code in ("reviewers", "overlap") else None
            form.add_error(field, exc)
        else:
            messages.success(request, f"Campaign “{campaign.name}” created.")
            return redirect("review:staff-detail", campaign_id=campaign.pk)
    return render(request, "review/staff/new.html", {"form": form})


@staff_required
def campaign_detail(request: HttpRequest, campaign_id: int) -> HttpResponse:
    try:
        overview = campaign_overview(campaign_id=campaign_id)
    except Campaign.DoesNotExist:
        from django.http import Http404

        raise Http404("No such campaign.") from None
    return render(request, "review/staff/detail.html", overview)
