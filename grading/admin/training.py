"""Admin for stored advantages and the λ-cap report (how often λ_max bound, per run and step)."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse
from django.urls import URLPattern, path, reverse
from django.utils.html import format_html, format_html_join

from grading.admin.data_version import VersionedAdmin
from grading.models import GroupAdvantages, IdempotencyKey
from grading.selectors.training import lambda_cap_report

_ATTEMPT_FIELDS = (
    "attempt_external_id",
    "status",
    "tier",
    "rank_in_tier",
    "coefficient",
    "adv_grpo",
    "adv_gagar",
    "reward_equivalent",
)


@admin.register(GroupAdvantages)
class GroupAdvantagesAdmin(VersionedAdmin[GroupAdvantages]):
    list_display = [
        "group",
        "config",
        "fallback",
        "fallback_reason",
        "lambda_raw",
        "lambda_applied",
        "capped",
        "mean_shift",
        "computed_at",
    ]
    list_filter = ["fallback", "fallback_reason", "capped", "config"]
    list_select_related = ["group__step__run", "group__task", "config"]
    search_fields = ["group__task__external_id", "group__step__run__name"]
    exclude = ["attempts", "params_hash"]
    readonly_fields = [
        f.name for f in GroupAdvantages._meta.fields if f.name not in ("attempts", "params_hash")
    ] + ["attempt_table"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # derived data: written by the refresh service only

    @admin.display(description="attempts")
    def attempt_table(self, obj: GroupAdvantages) -> str:
        head = format_html_join("", "<th>{}</th>", ((f,) for f in _ATTEMPT_FIELDS))
        body = format_html_join(
            "",
            "<tr>" + "<td>{}</td>" * len(_ATTEMPT_FIELDS) + "</tr>",
            (tuple(_cell(a.get(f)) for f in _ATTEMPT_FIELDS) for a in obj.attempts),
        )
        return format_html("<table><tr>{}</tr>{}</table>", head, body)

    def get_urls(self) -> list[URLPattern]:
        report = path(
            "lambda-cap/",
            self.admin_site.admin_view(self.lambda_cap_view),
            name="grading_groupadvantages_lambda_cap",
        )
        return [report, *super().get_urls()]

    def lambda_cap_view(self, request: HttpRequest) -> HttpResponse:
        # admin_view only checks is_staff; the report shows advantages, so it needs the same
        # permission as their list.
        if not self.has_view_permission(request):
            raise PermissionDenied
        run = request.GET.get("run") or None
        context = {
            **self.admin_site.each_context(request),
            "title": "λ-cap report",
            "run": run,
            "rows": lambda_cap_report(run_name=run),
        }
        return TemplateResponse(request, "admin/grading/lambda_cap_report.html", context)

    def changelist_view(
        self, request: HttpRequest, extra_context: dict[str, Any] | None = None
    ) -> HttpResponse:
        # The report is linked from the list's header so admins find it where advantages live.
        extra = {
            **(extra_context or {}),
            "subtitle": format_html(
                '<a href="{}">λ-cap report per run and step</a>',
                reverse("admin:grading_groupadvantages_lambda_cap"),
            ),
        }
        return super().changelist_view(request, extra_context=extra)


def _cell(value: object) -> str:
    return f"{value:+.6f}" if isinstance(value, float) else ("–" if value is None else str(value))


@admin.register(IdempotencyKey)
class IdempotencyKeyAdmin(admin.ModelAdmin[IdempotencyKey]):
    list_display = ["key", "user", "status_code", "created_at"]
    readonly_fields = ["user", "key", "request_hash", "status_code", "response", "created_at"]
    list_select_related = ["user"]
