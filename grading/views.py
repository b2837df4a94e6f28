from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect


def home(request: HttpRequest) -> HttpResponse:
    if not request.user.is_authenticated:
        return redirect("login")
    if request.user.is_staff:
        # Staff start from the studies they run; the admin, dashboards and ops are in the top bar.
        return redirect("review:staff-list")
    # Reviewers live in their queue.
    return redirect("review:queue")
