"""Input parsing for the review pages (views parse, services write)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django import forms
from django.contrib.auth import get_user_model
from django.db.models import QuerySet
from django.forms.models import ModelChoiceIterator

from grading.models import GraderConfig, Run, Task
from grading.services.tokens import SERVICE_ACCOUNTS_GROUP
from review.models import Campaign, Disagreement, FixRequest, Label
from review.models.reviewing import CRITERIA

SCORE_CHOICES = [("", "—")] + [(str(i), str(i)) for i in range(1, 6)]


def _score_field() -> forms.TypedChoiceField:
    return forms.TypedChoiceField(
        choices=SCORE_CHOICES, coerce=int, empty_value=None, required=False
    )


class LabelForm(forms.Form):
    """Every field optional: autosave sends half-finished work; submission checks completeness."""

    tier = forms.ChoiceField(choices=[("", "—"), *Label.Tier.choices], required=False)
    rank_in_tier = forms.IntegerField(min_value=1, max_value=99, required=False)
    approach_suitability = _score_field()
    implementation_precision = _score_field()
    minimality_of_changes = _score_field()
    unintended_side_effects = _score_field()
    codebase_consistency = _score_field()
    mergeability = forms.ChoiceField(
        choices=[("", "—"), *Label.Mergeability.choices], required=False
    )
    confidence = _score_field()
    notes = forms.CharField(max_length=10_000, required=False)
    # Comma-separated criteria still pre-filled from the tier (see Label.prefilled).
    prefilled = forms.CharField(max_length=500, required=False)
    # When the stored label the page's form was filled from was saved ("" for none yet): see
    # CandidatePanel.label_base. Not a label field.
    based_on = forms.CharField(max_length=64, required=False)

    def clean_prefilled(self) -> list[str]:
        names = [n for n in self.cleaned_data.get("prefilled", "").split(",") if n]
        unknown = [n for n in names if n not in CRITERIA]
        if unknown:
            raise forms.ValidationError(f"Unknown criteria: {', '.join(unknown)}")
        return sorted(set(names), key=CRITERIA.index)

    def clean_based_on(self) -> datetime | None:
        text = self.cleaned_data.get("based_on", "")
        if not text:
            return None
        try:
            moment = datetime.fromisoformat(text)
        except ValueError:
            raise forms.ValidationError("Not a time of a saved label.") from None
        if moment.tzinfo is None:
            raise forms.ValidationError("Not a time of a saved label.")
        return moment

    def values(self) -> dict[str, Any]:
        # Only fields the browser actually sent: a partial autosave must not blank the rest.
        return {k: v for k, v in self.cleaned_data.items() if k in self.data and k != "based_on"}


class FixRequestForm(forms.Form):
    path = forms.CharField(max_length=1024)
    line = forms.IntegerField(min_value=1)
    side = forms.ChoiceField(choices=FixRequest.Side.choices)
    text = forms.CharField(max_length=10_000)
    severity = forms.ChoiceField(choices=FixRequest.Severity.choices)
    criterion = forms.ChoiceField(
        choices=[("", "—"), *((c, c.replace("_", " ")) for c in CRITERIA)], required=False
    )


class OfferedChoices(ModelChoiceIterator):
    """The field's choices drawn from a narrower queryset than the one it validates against."""

    def __init__(self, field: forms.ModelChoiceField, queryset: QuerySet[Any]) -> None:
        super().__init__(field)
        self.queryset = queryset


class ReviewersField(forms.ModelMultipleChoiceField):
    """Offers people only (never a service account) and marks staff, who are not blind.

    It validates against every active account, so that a posted service account (a script, an
    old page) is refused by the service with its reason rather than "not one of the available
    choices"; a blank value is no reviewer, not "“” is not a valid value"."""

    def __init__(self, **kwargs: Any) -> None:
        users = get_user_model().objects.filter(is_active=True).order_by("username")
        super().__init__(
            queryset=users,
            widget=forms.CheckboxSelectMultiple,
            error_messages={"required": "Choose at least one reviewer."},
            **kwargs,
        )
        self.offered = users.exclude(groups__name=SERVICE_ACCOUNTS_GROUP)
        self.widget.choices = OfferedChoices(self, self.offered)

    def __deepcopy__(self, memo: dict[int, Any]) -> ReviewersField:
        # Each form gets its own copy, whose queryset setter resets the widget's choices.
        result: ReviewersField = super().__deepcopy__(memo)
        result.offered = self.offered.all()
        result.widget.choices = OfferedChoices(result, result.offered)
        return result

    def clean(self, value: Any) -> Any:
        if isinstance(value, (list, tuple)):
            value = [v for v in value if v not in ("", None)]
        return super().clean(value)

    def label_from_instance(self, obj: Any) -> str:
        name = obj.get_username()
        return f"{name} (staff: can read grader verdicts, not blind)" if obj.is_staff else name


class CampaignForm(forms.Form):
    name = forms.CharField(max_length=200)
    run = forms.ModelChoiceField(queryset=Run.objects.order_by("name"), required=False)
    step = forms.IntegerField(min_value=0, required=False)
    repository = forms.ChoiceField(required=False)
    has_verdict = forms.TypedChoiceField(
        choices=[("", "any"), ("yes", "with a grader verdict"), ("no", "without one")],
        coerce=lambda v: v == "yes",
        empty_value=None,
        required=False,
    )
    reviewers = ReviewersField()
    allow_staff = forms.BooleanField(
        required=False,
        label="Let staff accounts review",
        help_text="Staff can read the grader's verdicts (admin, dashboards, adjudication), so a "
        "staff reviewer is not blind: their labels measure the grader less well.",
    )
    overlap = forms.IntegerField(min_value=1, max_value=20, initial=2, label="Overlap k")
    show_trajectories = forms.BooleanField(required=False, initial=True)
    show_test_output = forms.BooleanField(required=False, initial=True)
    rubric_required = forms.BooleanField(required=False, initial=True)
    show_reference = forms.BooleanField(required=False, initial=False)
    reveal_policy = forms.ChoiceField(choices=Campaign.Reveal.choices)
    lease_minutes = forms.IntegerField(min_value=5, initial=180)
    fingerprint_patterns = forms.CharField(widget=forms.Textarea(attrs={"rows": 3}), required=False)
    # Both optional: a form (or a script) that predates them gets the plain campaign.
    sentinel_rate = forms.FloatField(
        min_value=0,
        max_value=1,
        initial=0,
        required=False,
        label="Sentinel rate",
        help_text="Share of each reviewer's submitted groups served to them again later, blind, "
        "to measure their self-consistency (0 = none, 0.1 = one in ten).",
    )
    queue_order = forms.ChoiceField(
        choices=Campaign.QueueOrder.choices,
        initial=Campaign.QueueOrder.POSITION,
        required=False,
        label="Queue order",
        help_text="By RL impact: groups first where the grader's tiers are least certain or "
        "where moving one candidate one tier would change who gains or loses advantage, or who "
        "gets the most (from the stored advantages).",
    )
    impact_config = forms.ModelChoiceField(
        queryset=GraderConfig.objects.order_by("name"),
        required=False,
        empty_label="each group's latest graded advantages",
        label="Advantages of",
    )

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        repos = Task.objects.order_by("repo").values_list("repo", flat=True).distinct()
        self.fields["repository"].choices = [("", "any"), *((r, r) for r in repos)]  # type: ignore[attr-defined]

    def clean_sentinel_rate(self) -> float:
        value = self.cleaned_data.get("sentinel_rate")
        return 0.0 if value is None else float(value)

    def clean_queue_order(self) -> str:
        return self.cleaned_data.get("queue_order") or Campaign.QueueOrder.POSITION

    def filters(self) -> dict[str, Any]:
        d = self.cleaned_data
        run = d.get("run")
        out = {
            "run": run.pk if run else None,
            "step": d.get("step"),
            "repository": d.get("repository") or None,
            "has_verdict": d.get("has_verdict"),
        }
        return {k: v for k, v in out.items() if v is not None}


class AdjudicationForm(forms.Form):
    resolution = forms.ChoiceField(
        choices=Disagreement.Resolution.choices, widget=forms.RadioSelect
    )
    adjudicated_tier = forms.ChoiceField(
        choices=[("", "— no tier —"), *Label.Tier.choices], required=False
    )
    note = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 3}), required=False, max_length=5000
    )
