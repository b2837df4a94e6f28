from django.urls import path

from grading.api.training import GroupAdvantagesApi, GroupsSubmitApi, StepAdvantagesApi
from grading.api.views import BundleImportApi

urlpatterns = [
    path("bundles", BundleImportApi.as_view(), name="api-bundles"),
    path("training/groups", GroupsSubmitApi.as_view(), name="api-training-submit"),
    path(
        "training/groups/<int:group_id>/advantages",
        GroupAdvantagesApi.as_view(),
        name="api-training-group-advantages",
    ),
    path(
        "training/runs/<str:run>/steps/<int:step>/advantages",
        StepAdvantagesApi.as_view(),
        name="api-training-step-advantages",
    ),
]
