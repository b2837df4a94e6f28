"""An admin whose edits move the data version (grading.services.data_version), so a change
made by hand reaches cached statistics like one made by a service."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.db.models import Model, QuerySet
from django.http import HttpRequest

from grading.services.data_version import data_changed


class VersionedAdmin[M: Model](admin.ModelAdmin[M]):
    """For models the statistics read (review.analytics.snapshots.STATS_MODELS). Django's admin
    writes through these four hooks only: the object, its m2m fields and inlines
    (`save_related`), one deletion and the list's bulk deletion; each commits with the bump."""

    def save_model(self, request: HttpRequest, obj: M, form: Any, change: bool) -> None:
        super().save_model(request, obj, form, change)
        data_changed()

    def save_related(self, request: HttpRequest, form: Any, formsets: Any, change: bool) -> None:
        super().save_related(request, form, formsets, change)
        data_changed()

    def delete_model(self, request: HttpRequest, obj: M) -> None:
        super().delete_model(request, obj)
        data_changed()

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[M]) -> None:
        super().delete_queryset(request, queryset)
        data_changed()
