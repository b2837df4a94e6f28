"""API tokens in the admin: made the way `create_api_token` makes them (the service), with the
secret shown once on the page that answers the form, never stored or shown again."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse

from grading.domain.wording import plural
from grading.models import ApiToken
from grading.services.tokens import (
    DEFAULT_SCOPES,
    SCOPES,
    api_token_create,
    api_token_revoke,
    clean_scopes,
    token_owner_problem,
)


class ApiTokenForm(forms.ModelForm[ApiToken]):
    scopes = forms.MultipleChoiceField(
        choices=ApiToken.Scope.choices,
        widget=forms.CheckboxSelectMultiple,
        initial=list(DEFAULT_SCOPES),
        help_text="submit: send groups and fetch their advantages; read: runs, grader runs, "
        "verdicts, labels, advantages; export: the three exports.",
    )

    class Meta:
        model = ApiToken
        fields = ["user", "name", "scopes"]

    def clean_user(self) -> Any:
        user = self.cleaned_data["user"]
        problem = token_owner_problem(user)
        if problem is not None:
            raise forms.ValidationError(problem)
        return user

    def clean_scopes(self) -> list[str]:
        try:
            return clean_scopes(self.cleaned_data["scopes"])
        except ValueError as exc:
            raise forms.ValidationError(str(exc)) from exc


@admin.register(ApiToken)
class ApiTokenAdmin(admin.ModelAdmin[ApiToken]):
    form = ApiTokenForm
    list_display = ["name", "user", "prefix", "scopes", "created_at", "last_used_at", "revoked_at"]
    list_select_related = ["user"]
    search_fields = ["name", "prefix", "user__username"]
    actions = ["revoke"]

    def get_fields(self, request: HttpRequest, obj: ApiToken | None = None) -> Any:
        if obj is None:
            return ["user", "name", "scopes"]
        return ["user", "name", "scopes", "prefix", "created_at", "last_used_at", "revoked_at"]

    def get_readonly_fields(self, request: HttpRequest, obj: ApiToken | None = None) -> Any:
        if obj is None:
            return []
        # The key hash is never shown: it identifies the secret and serves nobody here.
        return ["user", "prefix", "created_at", "last_used_at", "revoked_at"]

    def save_model(self, request: HttpRequest, obj: ApiToken, form: Any, change: bool) -> None:
        if change:
            super().save_model(request, obj, form, change)
            return
        token, secret = api_token_create(
            user=form.cleaned_data["user"],
            name=form.cleaned_data["name"],
            scopes=form.cleaned_data["scopes"],
        )
        # The admin logs and answers with `obj`: make it the token the service created.
        obj.pk, obj.prefix, obj.key_hash = token.pk, token.prefix, token.key_hash
        obj.scopes, obj.created_at = token.scopes, token.created_at
        obj._state.adding = False
        request._gagar_token_secret = secret  # type: ignore[attr-defined]

    def response_add(
        self, request: HttpRequest, obj: ApiToken, post_url_continue: str | None = None
    ) -> HttpResponse:
        secret = getattr(request, "_gagar_token_secret", None)
        if secret is None:
            return super().response_add(request, obj, post_url_continue)
        context = {
            **self.admin_site.each_context(request),
            "title": "API token created",
            "token": obj,
            "secret": secret,
            "opts": self.opts,
            "scopes": SCOPES,
        }
        response = TemplateResponse(request, "admin/grading/apitoken/created.html", context)
        # The page holds a secret: no cache may keep it.
        response["Cache-Control"] = "no-store"
        return response

    @admin.action(description="Revoke selected tokens")
    def revoke(self, request: HttpRequest, queryset: QuerySet[ApiToken]) -> None:
        n = 0
        for token in queryset.filter(revoked_at__isnull=True):
            api_token_revoke(token=token)
            n += 1
        self.message_user(request, f"Revoked {plural(n, 'token')}.", messages.SUCCESS)
