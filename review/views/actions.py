"""Recording endpoints. Each takes a form post (works without JavaScript, then redirects back)
or the same post from the page script with `Accept: application/json` (answers JSON)."""

from __future__ import annotations

import json

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect
from django.template.loader import render_to_string
from django.urls import reverse
from django.views.decorators.http import require_POST

from review.diffs import file_id_for
from review.forms import FixRequestForm, LabelForm
from review.models import Assignment, ClaimMark
from review.selectors.reviewing import fix_request_for_reviewer
from review.services.claims import NothingToMarkError, claim_mark_set
from review.services.diff_checks import file_by_id
from review.services.reviewing import (
    LabelBase,
    NothingToFlagError,
    SubmissionError,
    disagreement_flag,
    fix_request_create,
    fix_request_delete,
    label_save,
    review_submit,
)
from review.services.timing import review_events_record
from review.services.viewing import candidate_viewed_set
from review.views._common import own_assignment, own_candidate, wants_json

MAX_EVENT_BODY = 20_000


def _back(assignment: Assignment, alias: str | None = None) -> HttpResponse:
    url = reverse("review:page", args=[assignment.pk])
    return redirect(f"{url}?c={alias}#cand-{alias}" if alias else url)


def _errors(
    request: HttpRequest, assignment: Assignment, problems: list[str], alias: str | None
) -> HttpResponse:
    if wants_json(request):
        return JsonResponse({"ok": False, "problems": problems}, status=400)
    for p in problems:
        messages.error(request, p)
    return _back(assignment, alias)


def _form_problems(form: LabelForm | FixRequestForm) -> list[str]:
    return [f"{field}: {err}" for field, errs in form.errors.items() for err in errs]


def _base(form: LabelForm) -> LabelBase | None:
    # A post without based_on (a client of its own sending a few fields) is not checked.
    if "based_on" not in form.data:
        return None
    return LabelBase(updated_at=form.cleaned_data["based_on"])


@login_required
@require_POST
def label(request: HttpRequest, assignment_id: int, token: str) -> HttpResponse:
    assignment = own_assignment(request, assignment_id)
    candidate = own_candidate(assignment, token)
    form = LabelForm(request.POST)
    if not form.is_valid():
        return _errors(request, assignment, _form_problems(form), candidate.alias)
    try:
        saved = label_save(candidate=candidate, values=form.values(), base=_base(form))
    except ValidationError as exc:
        return _errors(request, assignment, exc.messages, candidate.alias)
    if wants_json(request):
        return JsonResponse(
            {
                "ok": True,
                "tier": saved.tier,
                "rank": saved.rank_in_tier,
                "saved_at": saved.updated_at.isoformat(),
            }
        )
    messages.success(request, f"Saved {candidate.alias}.")
    return _back(assignment, candidate.alias)


@login_required
@require_POST
def fix_create(request: HttpRequest, assignment_id: int, token: str) -> HttpResponse:
    assignment = own_assignment(request, assignment_id)
    candidate = own_candidate(assignment, token)
    form = FixRequestForm(request.POST)
    if not form.is_valid():
        return _errors(request, assignment, _form_problems(form), candidate.alias)
    try:
        fix = fix_request_create(candidate=candidate, **form.cleaned_data)
    except ValidationError as exc:
        return _errors(request, assignment, exc.messages, candidate.alias)
    if wants_json(request):
        html = render_to_string(
            "review/_fix_request.html",
            {"fix": fix, "assignment": assignment, "locked": False},
            request=request,
        )
        return JsonResponse({"ok": True, "html": html})
    return _back(assignment, candidate.alias)


@login_required
@require_POST
def viewed(request: HttpRequest, assignment_id: int, token: str) -> HttpResponse:
    """Tick or untick one file as viewed (`file` = its id on the page, `viewed` = 1 or 0)."""
    assignment = own_assignment(request, assignment_id)
    candidate = own_candidate(assignment, token)
    try:
        file = file_by_id(candidate=candidate, file_id=request.POST.get("file", ""))
        paths = candidate_viewed_set(
            candidate=candidate, path=file.path, viewed=request.POST.get("viewed") == "1"
        )
    except ValidationError as exc:
        return _errors(request, assignment, exc.messages, candidate.alias)
    if wants_json(request):
        return JsonResponse({"ok": True, "viewed": sorted(file_id_for(p) for p in paths)})
    return _back(assignment, candidate.alias)


@login_required
@require_POST
def fix_delete(request: HttpRequest, assignment_id: int, fix_id: int) -> HttpResponse:
    assignment = own_assignment(request, assignment_id)
    fix = fix_request_for_reviewer(assignment=assignment, fix_id=fix_id)
    if fix is None:
        raise Http404("No such fix request.")
    try:
        fix_request_delete(fix_request=fix)
    except ValidationError as exc:
        return _errors(request, assignment, exc.messages, fix.candidate.alias)
    if wants_json(request):
        return JsonResponse({"ok": True})
    return _back(assignment, fix.candidate.alias)


@login_required
@require_POST
def events(request: HttpRequest, assignment_id: int) -> HttpResponse:
    assignment = own_assignment(request, assignment_id)
    if len(request.body) > MAX_EVENT_BODY:
        return JsonResponse({"ok": False}, status=413)
    try:
        payload = json.loads(request.body or b"{}")
    except ValueError:
        return JsonResponse({"ok": False}, status=400)
    items = payload.get("events") if isinstance(payload, dict) else None
    if not isinstance(items, list):
        return JsonResponse({"ok": False}, status=400)
    review_events_record(assignment=assignment, events=[e for e in items if isinstance(e, dict)])
    return JsonResponse({"ok": True})


@login_required
@require_POST
def submit(request: HttpRequest, assignment_id: int) -> HttpResponse:
    assignment = own_assignment(request, assignment_id)
    try:
        review_submit(assignment=assignment)
    except SubmissionError as exc:
        if wants_json(request):
            # Each problem with its candidate token and field, for the page to show in place.
            fields = [{"candidate": p.key, "field": p.field, "text": p.text} for p in exc.problems]
            return JsonResponse(
                {"ok": False, "problems": exc.messages, "fields": fields}, status=400
            )
        return _errors(request, assignment, exc.messages, None)
    except ValidationError as exc:
        return _errors(request, assignment, exc.messages, None)
    if wants_json(request):
        return JsonResponse({"ok": True, "url": reverse("review:page", args=[assignment.pk])})
    return _back(assignment)


@login_required
@require_POST
def disagree(request: HttpRequest, assignment_id: int, token: str) -> HttpResponse:
    assignment = own_assignment(request, assignment_id)
    candidate = own_candidate(assignment, token)
    try:
        flag = disagreement_flag(candidate=candidate, note=request.POST.get("note", ""))
    except NothingToFlagError as exc:
        if wants_json(request):
            return JsonResponse({"ok": False, "problems": exc.messages}, status=404)
        raise Http404("Nothing to disagree with.") from None
    except ValidationError as exc:
        return _errors(request, assignment, exc.messages, candidate.alias)
    done = f"Flagged {candidate.alias} for adjudication."
    if wants_json(request):
        # No flag id: ids count every reviewer's flags, which are not this reviewer's to see.
        return JsonResponse({"ok": True, "candidate": candidate.alias, "status": flag.status})
    messages.success(request, done)
    return _back(assignment, candidate.alias)


@login_required
@require_POST
def claim_mark(request: HttpRequest, assignment_id: int, token: str) -> HttpResponse:
    """The reviewer's mark on one of the grader's claims about a candidate (after the reveal)."""
    assignment = own_assignment(request, assignment_id)
    candidate = own_candidate(assignment, token)
    mark = request.POST.get("mark", "")
    if mark not in ClaimMark.Mark.values:
        return _errors(request, assignment, ["Choose correct, wrong or can't tell."], None)
    try:
        row = claim_mark_set(candidate=candidate, handle=request.POST.get("claim", ""), mark=mark)
    except NothingToMarkError:
        raise Http404("No such claim.") from None
    if wants_json(request):
        return JsonResponse({"ok": True, "mark": row.mark})
    return _back(assignment, candidate.alias)
