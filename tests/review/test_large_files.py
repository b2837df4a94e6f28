"""Large files: highlighting switches off above the threshold and long files are paginated,
with further pages served as fragments of the reviewer's own candidate."""

import hashlib

import pytest
from django.urls import reverse

from grading.models import Attempt, Group, Patch, Run, Step, Task
from review.services.campaigns import campaign_create
from review.services.queue import assignment_next

pytestmark = pytest.mark.django_db


def _big_group() -> Group:
    run = Run.objects.create(name="big")
    step = Step.objects.create(run=run, number=0)
    task = Task.objects.create(
        external_id="big", repo="o/r", problem_statement="p", content_hash="0" * 64
    )
    group = Group.objects.create(step=step, task=task, content_hash="0" * 64)
    lines = 4_500  # over the renderer's page size and highlight threshold
    diff = (
        "diff --git a/big.py b/big.py\nnew file mode 100644\n--- /dev/null\n+++ b/big.py\n"
        f"@@ -0,0 +1,{lines} @@\n" + "".join(f"+value_{i} = {i}\n" for i in range(lines))
    )
    data = diff.encode()
    patch = Patch.objects.create(
        sha256=hashlib.sha256(data).hexdigest(), content=data, size=len(data)
    )
    Attempt.objects.create(group=group, external_id="big-1", index=0, test_reward=1.0, patch=patch)
    return group


def test_a_large_file_is_paginated_and_not_highlighted(client, reviewer):
    group = _big_group()
    campaign = campaign_create(
        name="big", created_by=None, reviewers=[reviewer], filters={"run": group.step.run_id}
    )
    assignment = assignment_next(campaign=campaign, reviewer=reviewer)
    token = assignment.candidates.get().token
    client.force_login(reviewer)
    page = client.get(reverse("review:page", args=[assignment.pk])).content.decode()
    assert "Shown without syntax highlighting." in page
    assert "Page 1 of 3" in page
    file_url = reverse("review:file", args=[assignment.pk, token])
    assert f"{file_url}?f=" in page  # the placeholder was filled with this reviewer's URL
    file_id = page.split(f"{file_url}?f=", 1)[1].split("&", 1)[0]
    second = client.get(file_url, {"f": file_id, "page": 2}, HTTP_X_FRAGMENT="1")
    assert second.status_code == 200
    body = second.content.decode()
    assert "<html" not in body and 'data-n="2001"' in body and "Page 2 of 3" in body
    assert client.get(file_url, {"f": file_id, "page": 9}).status_code == 404
