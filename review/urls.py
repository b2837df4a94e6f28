from django.urls import path

from review.views import actions, adjudication, pages, staff

app_name = "review"

urlpatterns = [
    path("", pages.queue, name="queue"),
    path("campaigns/<int:campaign_id>/next", pages.take_next, name="next"),
    path("a/<int:assignment_id>/", pages.page, name="page"),
    path("a/<int:assignment_id>/compare", pages.compare, name="compare"),
    path("a/<int:assignment_id>/events", actions.events, name="events"),
    path("a/<int:assignment_id>/submit", actions.submit, name="submit"),
    path("a/<int:assignment_id>/fix/<int:fix_id>/delete", actions.fix_delete, name="fix-delete"),
    path("a/<int:assignment_id>/c/<str:token>/label", actions.label, name="label"),
    path("a/<int:assignment_id>/c/<str:token>/fix", actions.fix_create, name="fix"),
    path("a/<int:assignment_id>/c/<str:token>/disagree", actions.disagree, name="disagree"),
    path("a/<int:assignment_id>/c/<str:token>/viewed", actions.viewed, name="viewed"),
    path("a/<int:assignment_id>/c/<str:token>/claim", actions.claim_mark, name="claim"),
    path("a/<int:assignment_id>/c/<str:token>/trajectory", pages.trajectory, name="trajectory"),
    path("a/<int:assignment_id>/c/<str:token>/file", pages.file_page, name="file"),
    path("staff/", staff.campaign_list, name="staff-list"),
    path("staff/new", staff.campaign_new, name="staff-new"),
    path("staff/<int:campaign_id>/", staff.campaign_detail, name="staff-detail"),
    path("staff/adjudication/", adjudication.adjudication_list, name="adjudication-list"),
    path(
        "staff/adjudication/<int:disagreement_id>/",
        adjudication.adjudication_detail,
        name="adjudication-detail",
    ),
    path(
        "staff/adjudication/<int:disagreement_id>/reopen",
        adjudication.adjudication_reopen,
        name="adjudication-reopen",
    ),
]
