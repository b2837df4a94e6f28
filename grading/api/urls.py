from django.urls import path

from grading.api.views import BundleImportApi

urlpatterns = [
    path("bundles", BundleImportApi.as_view(), name="api-bundles"),
]
