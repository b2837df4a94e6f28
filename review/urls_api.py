from django.urls import path

from review.api import LabelsApi, LabelsExportApi, PackageExportApi

urlpatterns = [
    path("labels", LabelsApi.as_view(), name="api-labels"),
    path("exports/labels", LabelsExportApi.as_view(), name="api-export-labels"),
    path("exports/package", PackageExportApi.as_view(), name="api-export-package"),
]
