"""Page checks shared by the injection-corpus tests: a page answers 200 with nothing injected,
and every admin page that shows imported content does too."""

from __future__ import annotations

from django.test import Client

from grading.models import Attempt, Group, Task
from tests.security.corpus import injection_problems


def assert_inert(client: Client, url: str) -> str:
    response = client.get(url)
    assert response.status_code == 200, url
    html = response.content.decode()
    assert not injection_problems(html), (url, injection_problems(html))
    return html


def assert_admin_pages_inert(client: Client) -> None:
    """The admin's lists and change pages of everything an import writes."""
    for model in ("task", "group", "attempt", "patch", "trajectory", "run"):
        assert_inert(client, f"/admin/grading/{model}/")
    for task in Task.objects.all():
        assert_inert(client, f"/admin/grading/task/{task.pk}/change/")
    for a in Attempt.objects.select_related("patch", "trajectory"):
        assert_inert(client, f"/admin/grading/attempt/{a.pk}/change/")
        if a.patch_id:
            assert_inert(client, f"/admin/grading/patch/{a.patch_id}/change/")
        if hasattr(a, "trajectory"):
            assert_inert(client, f"/admin/grading/trajectory/{a.trajectory.pk}/change/")
    for g in Group.objects.all():
        assert_inert(client, f"/admin/grading/group/{g.pk}/change/")
