from django.contrib import admin
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView

from grading import views as grading_views

urlpatterns = [
    path("", grading_views.home, name="home"),
    path("healthz", grading_views.healthz, name="healthz"),
    path("admin/", admin.site.urls),
    path("accounts/", include("django.contrib.auth.urls")),
    path("api/v1/", include("grading.api.urls")),
    path("api/v1/schema", SpectacularAPIView.as_view(), name="api-schema"),
]
