from django.urls import path

from review.views import dashboards as views

app_name = "dashboards"

urlpatterns = [
    path("", views.agreement, name="agreement"),
    path("audit", views.audit, name="audit"),
    path("gate", views.gate, name="gate"),
    path("export", views.export, name="export"),
    path("export/<slug:what>.zip", views.export_download, name="download"),
    path("csv/<slug:chart>.csv", views.chart_csv, name="csv"),
]
