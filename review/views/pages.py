"""Reviewer pages: the queue, the review page, compare mode and the lazily loaded pieces."""

from __future__ import annotations

import re
import secrets
from typing import Any

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils.safestring import mark_safe
from django.views.decorators.http import require_GET, require_POST

from gagar_site.compression import mark_compress_safe
from gagar_site.inert_text import inert_html, mark_inert
from grading.selectors.synthetic import run_is_synthetic
from review.blinded_cache import (
    assignment_redactor,
    compared_files,
    rendered_diffs,
    rendered_file_page,
    trajectory_slice,
)
from review.diffs import RenderedFile
from review.diffs.html import folded_rows
from review.models import Assignment, Campaign
from review.models.reviewing import TIER_TYPICAL_SCORES
from review.presenters import candidate_context, review_page
from review.selectors.reviewing import reviewer_queue
from review.services.queue import AssignmentGoneError, assignment_next, assignment_resume
from review.views._common import is_fragment, own_assignment, own_candidate

TRAJECTORY_PAGE = 50


def _base(request: HttpRequest) -> str:
    # A fragment for the page script to insert, or a whole page for a plain link.
    return "review/_bare.html" if is_fragment(request) else "base.html"


@login_required
@require_GET
def queue(request: HttpRequest) -> HttpResponse:
    assert request.user.is_authenticated
    return render(request, "review/queue.html", {"rows": reviewer_queue(reviewer=request.user)})


@login_required
@require_POST
def take_next(request: HttpRequest, campaign_id: int) -> HttpResponse:
    assert request.user.is_authenticated
    campaign = get_object_or_404(Campaign, pk=campaign_id, reviewers=request.user)
    assignment = assignment_next(campaign=campaign, reviewer=request.user)
    if assignment is None:
        messages.info(request, f"Nothing left to review in “{campaign.name}”. Thank you!")
        return redirect("review:queue")
    return redirect("review:page", assignment_id=assignment.pk)


def _spliced(request: HttpRequest, template: str, context: dict[str, Any]) -> HttpResponse:
    """Render around small markers, then splice each loaded candidate's cached diff bytes in:
    hundreds of kilobytes of diff HTML are copied once instead of at every template level.
    Untrusted text is escaped everywhere, so it can never contain the marker."""
    marker = f"<!--gagar-diff-{secrets.token_hex(8)}:"
    mains: list[bytes] = []
    for panel in context["panels"]:
        if panel.loaded:
            panel.main_html = mark_safe(f"{marker}{len(mains)}-->")  # noqa: S308 - our own marker
            mains.append(panel.main_bytes)
    response = render(request, template, context)
    # The page's own text made inert here, before the diffs (inert by construction) go in, so
    # the safety net (gagar_site/inert_text.py) does not scan megabytes of diff again.
    head, *rest = inert_html(response.content).split(marker.encode())
    parts = [head]
    for piece in rest:
        index, _, tail = piece.partition(b"-->")
        parts += [mains[int(index)], tail]
    response.content = b"".join(parts)
    mark_inert(response)
    return response


@login_required
@require_GET
def page(request: HttpRequest, assignment_id: int) -> HttpResponse:
    assignment = own_assignment(request, assignment_id)
    if assignment.status == Assignment.Status.EXPIRED:
        try:
            assignment_resume(assignment=assignment)
        except AssignmentGoneError:
            messages.warning(request, "That review expired and went to someone else.")
            return redirect("review:queue")
    # Only the active candidate's diff comes with the page (?c=<alias>, else the first); the
    # page script fetches the others' panels when their tab is opened.
    context = review_page(assignment=assignment, active=request.GET.get("c"))
    context["config"] = {
        "heartbeatMs": settings.GAGAR_REVIEW_HEARTBEAT_MS,
        "idleMs": settings.GAGAR_REVIEW_IDLE_SECONDS * 1000,
        "locked": assignment.status != Assignment.Status.IN_PROGRESS,
        # Per reviewer, so kept out of the cached file list and applied by the page script.
        "viewed": {panel.token: panel.viewed for panel in context["panels"]},
        "typicalScores": TIER_TYPICAL_SCORES,
        # The one label form's contents per candidate and where each saves.
        "labels": {
            panel.token: panel.label_state()
            | {"action": reverse("review:label", args=[assignment.pk, panel.token])}
            for panel in context["panels"]
        },
        "active": context["active"].token,
    }
    # ?c= is a validated alias (an unknown one shows the first candidate), never echoed.
    return mark_compress_safe(_spliced(request, "review/page.html", context))  # type: ignore[return-value]


@login_required
@require_GET
def panel(request: HttpRequest, assignment_id: int, token: str) -> HttpResponse:
    """One candidate's panel (files, shared changes, fix requests, diff, test output), for the
    page script to insert when its tab is opened: the same template and blinded content the
    page would have shown for it."""
    assignment = own_assignment(request, assignment_id)
    # The assignment's own candidates, already read with it (no second read of the candidate).
    candidates = list(assignment.candidates.all())
    if not any(c.token == token for c in candidates):
        raise Http404("No such candidate.")
    context = candidate_context(assignment=assignment, candidates=candidates, loaded={token})
    context["p"] = next(p for p in context["panels"] if p.token == token)
    return _spliced(request, "review/_panel.html", context)


BLOCK = re.compile(r"(f-[0-9a-f]{16})-p([0-9]{1,6})-c[0-9]{1,6}")
MAX_BLOCKS = 500


@login_required
@require_GET
def context(request: HttpRequest, assignment_id: int, token: str) -> HttpResponse:
    """Folded context rows (`?b=<block id>`, repeated) of one candidate's diff, left out of the
    page until the reviewer expands them."""
    assignment = own_assignment(request, assignment_id)
    candidate = own_candidate(assignment, token)
    patch = candidate.attempt.patch
    wanted = [b for b in request.GET.getlist("b")[:MAX_BLOCKS] if BLOCK.fullmatch(b)]
    if patch is None or not wanted:
        raise Http404("No such context.")
    redactor = assignment_redactor(assignment=assignment)
    task = assignment.group.task
    first: dict[str, RenderedFile] | None = None
    blocks = []
    for block in wanted:
        match = BLOCK.fullmatch(block)
        assert match is not None
        file_id, page_no = match.group(1), int(match.group(2))
        rendered: RenderedFile | None
        if page_no == 1:
            if first is None:
                diffs = rendered_diffs(patches={token: patch}, redactor=redactor, task=task)
                first = {f.file_id: f for f in diffs[token]}
            rendered = first.get(file_id)
        else:
            rendered = rendered_file_page(
                patch=patch, redactor=redactor, task=task, file_id=file_id, page=page_no
            )
        rows = folded_rows(rendered.html, block) if rendered is not None else None
        if rows is not None:
            # Rows of our own renderer, escaped when they were rendered.
            blocks.append((block, mark_safe(rows)))  # noqa: S308
    if not blocks:
        raise Http404("No such context.")
    response = render(request, "review/_context_rows.html", {"blocks": blocks})
    return mark_compress_safe(response)  # type: ignore[return-value]


@login_required
@require_GET
def compare(request: HttpRequest, assignment_id: int) -> HttpResponse:
    assignment = own_assignment(request, assignment_id)
    candidates = list(assignment.candidates.all())
    by_token = {c.token: c for c in candidates}
    a = by_token.get(request.GET.get("a", "")) or candidates[0]
    b = by_token.get(request.GET.get("b", "")) or candidates[min(1, len(candidates) - 1)]
    redactor = assignment_redactor(assignment=assignment)
    files = compared_files(
        a=a.attempt.patch, b=b.attempt.patch, redactor=redactor, task=assignment.group.task
    )
    # The files only one candidate changes are listed apart, each with that candidate's diff.
    own = rendered_diffs(
        patches={a.token: a.attempt.patch, b.token: b.attempt.patch},
        redactor=redactor,
        task=assignment.group.task,
    )
    own_by_path = {
        "only_a": {f.path: f for f in own[a.token]},
        "only_b": {f.path: f for f in own[b.token]},
    }
    apart = [
        (f, a if f.kind == "only_a" else b, own_by_path[f.kind].get(f.path))
        for f in files
        if f.kind in own_by_path
    ]
    return render(
        request,
        "review/compare.html",
        {
            "assignment": assignment,
            "candidates": candidates,
            "a": a,
            "b": b,
            "both": [f for f in files if f.kind == "both"],
            "same": [f for f in files if f.kind == "same"],
            "apart": apart,
            "synthetic": run_is_synthetic(assignment.group.step.run),
            "hunks_only": any(f.pair is not None and not f.pair.complete for f in files),
        },
    )


@login_required
@require_GET
def trajectory(request: HttpRequest, assignment_id: int, token: str) -> HttpResponse:
    assignment = own_assignment(request, assignment_id)
    if not assignment.campaign.show_trajectories:
        raise Http404("This campaign does not show trajectories.")
    candidate = own_candidate(assignment, token)
    traj = getattr(candidate.attempt, "trajectory", None)
    if traj is None:
        raise Http404("No trajectory.")
    try:
        start = max(int(request.GET.get("start", 0)), 0)
    except ValueError:
        start = 0
    query = request.GET.get("q", "")[:200]
    events = trajectory_slice(
        trajectory=traj,
        redactor=assignment_redactor(assignment=assignment),
        start=start,
        count=TRAJECTORY_PAGE,
        query=query,
    )
    if query:
        more = events[-1]["index"] + 1 if len(events) == TRAJECTORY_PAGE else None
    else:
        more = start + TRAJECTORY_PAGE if start + TRAJECTORY_PAGE < traj.event_count else None
    context = {
        "assignment": assignment,
        "candidate": candidate,
        "events": events,
        "total": traj.event_count,
        "query": query,
        "more": more,
        "start": start,
        "end": start + len(events),
        "base": _base(request),
    }
    return render(request, "review/trajectory.html", context)


@login_required
@require_GET
def file_page(request: HttpRequest, assignment_id: int, token: str) -> HttpResponse:
    assignment = own_assignment(request, assignment_id)
    candidate = own_candidate(assignment, token)
    try:
        number = int(request.GET.get("page", "1"))
    except ValueError:
        raise Http404("Bad page.") from None
    patch = candidate.attempt.patch
    rendered = (
        rendered_file_page(
            patch=patch,
            redactor=assignment_redactor(assignment=assignment),
            task=assignment.group.task,
            file_id=request.GET.get("f", ""),
            page=number,
        )
        if patch is not None
        else None
    )
    if rendered is None:
        raise Http404("No such file page.")
    return render(
        request,
        "review/file_page.html",
        {
            "assignment": assignment,
            "candidate": candidate,
            "f": rendered,
            "base": _base(request),
            # Inserted into the review page, whose script fetches folded rows when expanded.
            "lean": is_fragment(request),
        },
    )
