from django.urls import path

from grading.api.bundles import BundleImportApi
from grading.api.exports import AdvantagesExportApi
from grading.api.reads import GroupGraderRunsApi, GroupVerdictsApi, RunsListApi, StepsListApi
from grading.api.training import GroupAdvantagesApi, GroupsSubmitApi, StepAdvantagesApi

urlpatterns = [
    path("bundles", BundleImportApi.as_view(), name="api-bundles"),
    path("training/groups", GroupsSubmitApi.as_view(), name="api-training-submit"),
    path(
        "training/groups/<int:group_db_id>/advantages",
        GroupAdvantagesApi.as_view(),
        name="api-training-group-advantages",
    ),
    path(
        "training/runs/<str:run>/steps/<int:step>/advantages",
        StepAdvantagesApi.as_view(),
        name="api-training-step-advantages",
    ),
    path("runs", RunsListApi.as_view(), name="api-runs"),
    path("runs/<str:run>/steps", StepsListApi.as_view(), name="api-steps"),
    path(
        "groups/<int:group_db_id>/grader-runs", GroupGraderRunsApi.as_view(), name="api-grader-runs"
    ),
    path("groups/<int:group_db_id>/verdicts", GroupVerdictsApi.as_view(), name="api-verdicts"),
    path("exports/advantages", AdvantagesExportApi.as_view(), name="api-export-advantages"),
]
