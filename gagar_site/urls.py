from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView

from gagar_site import views
from gagar_site.metrics import metrics_view

urlpatterns = [
    path("", views.home, name="home"),
    path("healthz", views.healthz, name="healthz"),
    path("readyz", views.readyz, name="readyz"),
    path("ops/", views.ops_status, name="ops-status"),
    path("metrics", metrics_view, name="metrics"),
    path("admin/", admin.site.urls),
    # No self-service password reset: nothing here sends mail. Staff reset passwords in the admin
    # (or `manage.py changepassword`).
    path("accounts/login/", auth_views.LoginView.as_view(), name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path(
        "accounts/password_change/",
        auth_views.PasswordChangeView.as_view(),
        name="password_change",
    ),
    path(
        "accounts/password_change/done/",
        auth_views.PasswordChangeDoneView.as_view(),
        name="password_change_done",
    ),
    path("review/", include("review.urls")),
    path("dashboards/", include("review.urls_dashboards")),
    path("api/v1/", include("grading.api.urls")),
    path("api/v1/", include("review.urls_api")),
    path("api/v1/schema", SpectacularAPIView.as_view(), name="api-schema"),
    # Swagger UI with its assets served from here (drf-spectacular-sidecar) and its start-up
    # script as a separate file: the CSP allows no CDN and no inline script.
    path(
        "api/v1/docs", SpectacularSwaggerSplitView.as_view(url_name="api-schema"), name="api-docs"
    ),
]

# Unknown /api/ URLs answer with a problem document, like the API itself.
handler404 = "gagar_site.errors.not_found"

# A lost database answers 503 (retry later) instead of a 500 page (gagar_site/errors.py).
handler500 = "gagar_site.errors.server_error_or_unavailable"
