"""Admin for campaigns and what reviewers recorded (staff only; creation has its own page)."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin
from django.contrib.auth.admin import UserAdmin
from django.contrib.auth.models import User
from django.core.exceptions import ValidationError
from django.http import HttpRequest

from grading.admin.data_version import VersionedAdmin
from grading.services.tokens import SERVICE_ACCOUNTS_GROUP
from review.forms import OfferedChoices
from review.models import Assignment, Campaign, Candidate, Disagreement, FixRequest, Label
from review.services.campaigns import reviewers_check, service_reviewers_refuse
from review.services.impact import campaign_impact_refresh


class CampaignAdminForm(forms.ModelForm[Campaign]):
    """The admin's edit refuses what the staff form refuses: a service account as a reviewer
    (always, so an existing one must be taken out before anything else is saved), and k above
    the number of reviewers (when either changes: imported campaigns keep their own k)."""

    class Meta:
        model = Campaign
        fields = "__all__"  # noqa: DJ007 — the admin's own field list decides what is shown

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # Service accounts are not offered; one already on this campaign stays listed (and
        # selected), so that saving refuses it by name instead of dropping it unseen.
        field = self.fields.get("reviewers")
        if isinstance(field, forms.ModelMultipleChoiceField) and field.queryset is not None:
            current = self.instance.reviewers.all() if self.instance.pk else User.objects.none()
            people = field.queryset.exclude(groups__name=SERVICE_ACCOUNTS_GROUP)
            field.widget.choices = OfferedChoices(field, (people | current).distinct())

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        reviewers = data.get("reviewers")
        overlap = data.get("overlap")
        if reviewers is None:
            return data
        try:
            if overlap is not None and {"overlap", "reviewers"} & set(self.changed_data):
                reviewers_check(reviewers=reviewers, overlap=overlap)
            else:
                service_reviewers_refuse(reviewers)
        except ValidationError as exc:
            self.add_error(
                "overlap" if getattr(exc, "code", None) == "overlap" else "reviewers", exc
            )
        return data


@admin.register(Campaign)
class CampaignAdmin(VersionedAdmin[Campaign]):
    form = CampaignAdminForm
    list_filter = ("origin", "status", "reveal_policy")
    filter_horizontal = ("reviewers",)
    readonly_fields = ("filters", "origin", "import_sources", "created_at")
    list_display = (
        "display_name",
        "origin",
        "status",
        "overlap",
        "sentinel_rate",
        "queue_order",
        "reveal_policy",
        "created_at",
    )

    def save_model(self, request: HttpRequest, obj: Campaign, form: Any, change: bool) -> None:
        super().save_model(request, obj, form, change)
        if obj.queue_order == Campaign.QueueOrder.RL_IMPACT:
            # The scores the queue will order by, shown on the campaign's staff page at once.
            campaign_impact_refresh(campaign=obj)


class CandidateInline(admin.TabularInline[Candidate, Assignment]):
    model = Candidate
    fields = ("alias", "position", "attempt", "active_ms")
    readonly_fields = fields
    extra = 0
    can_delete = False


# What a reviewer recorded, and the record of recording it, is the reviewer's: the review page
# writes it and Submit checks it (every candidate tiered, ranks 1, 2, … without gaps, no rank on
# an exploit, a blocking fix request behind "not mergeable"). An edit here would skip those rules
# and leave no trail of who changed a reviewer's label. To have a review done again, delete its
# assignment (its labels and fix requests go with it, and the group's slot is free again).
RECORDED_BY_THE_REVIEWER = (
    "group",
    "reviewer",
    "status",
    "started_at",
    "submitted_at",
    "active_ms",
    "last_event_at",
    "focus_active",
    "focus_candidate",
    "imported",
    "sentinel",
)


class ReviewerRecordAdmin(admin.ModelAdmin[Any]):
    """Shown, never written (see RECORDED_BY_THE_REVIEWER)."""

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(Assignment)
class AssignmentAdmin(VersionedAdmin[Assignment]):
    list_display = (
        "pk",
        "campaign",
        "group",
        "reviewer",
        "status",
        "sentinel",
        "active_time",
        "submitted_at",
    )
    list_filter = ("status", "sentinel", "campaign")
    raw_id_fields = ("group", "focus_candidate")
    readonly_fields = ("imported", "sentinel")
    inlines = [CandidateInline]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # the queue and the reviews importer make assignments

    def get_deleted_objects(self, objs: Any, request: HttpRequest) -> Any:
        # Its labels and fix requests go with it, although their own pages cannot delete them
        # (one by one that would leave a submitted review with untiered candidates).
        deleted, counts, perms_needed, protected = super().get_deleted_objects(objs, request)
        records = {m._meta.verbose_name for m in (Label, FixRequest)}
        return deleted, counts, perms_needed - records, protected

    def get_readonly_fields(self, request: HttpRequest, obj: Assignment | None = None) -> Any:
        if obj is not None and obj.status == Assignment.Status.SUBMITTED:
            # A submitted review is a record; only its campaign (where it counts) may move.
            return (*RECORDED_BY_THE_REVIEWER, "expires_at")
        return super().get_readonly_fields(request, obj)

    @admin.display(description="active ms", ordering="active_ms")
    def active_time(self, obj: Assignment) -> str:
        # An imported review recorded no time: absent, not 0.
        return "not recorded (imported)" if obj.imported else str(obj.active_ms)


@admin.register(Label)
class LabelAdmin(ReviewerRecordAdmin):
    list_display = ("candidate", "tier", "rank_in_tier", "mergeability", "confidence", "updated_at")
    raw_id_fields = ("candidate",)


@admin.register(FixRequest)
class FixRequestAdmin(ReviewerRecordAdmin):
    list_display = ("candidate", "path", "line", "side", "severity", "active_ms_before")
    raw_id_fields = ("candidate",)


@admin.register(Disagreement)
class DisagreementAdmin(admin.ModelAdmin[Disagreement]):
    list_display = (
        "candidate",
        "grader_run",
        "status",
        "resolution",
        "adjudicated_tier",
        "created_at",
    )
    list_filter = ("status", "resolution")
    raw_id_fields = ("candidate", "grader_run")
    # Outcomes are recorded on the adjudication page, which keeps them consistent.
    readonly_fields = (
        "status",
        "resolution",
        "adjudicated_tier",
        "resolution_note",
        "resolved_by",
        "resolved_at",
    )


class ReviewerUserAdmin(VersionedAdmin[User], UserAdmin):
    """Django's user admin, moving the data version: deleting a user deletes their assignments,
    labels and fix requests (CASCADE), which the statistics read."""


admin.site.unregister(User)
admin.site.register(User, ReviewerUserAdmin)
