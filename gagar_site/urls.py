from django.contrib import admin
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView

from grading import views as grading_views
from grading import views_ops

urlpatterns = [
    path("", grading_views.home, name="home"),
    path("healthz", views_ops.healthz, name="healthz"),
    path("readyz", views_ops.readyz, name="readyz"),
    path("ops/", views_ops.ops_status, name="ops-status"),
    path("admin/", admin.site.urls),
    path("accounts/", include("django.contrib.auth.urls")),
    path("review/", include("review.urls")),
    path("dashboards/", include("review.urls_dashboards")),
    path("api/v1/", include("grading.api.urls")),
    path("api/v1/schema", SpectacularAPIView.as_view(), name="api-schema"),
]

# A lost database answers 503 (retry later) instead of a 500 page (gagar_site/errors.py).
handler500 = "gagar_site.errors.server_error_or_unavailable"
