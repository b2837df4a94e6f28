"""Labels autosave, submission validates the whole group and then locks."""

import pytest
from django.core.exceptions import ValidationError

from review.models import Assignment, Label
from review.services.queue import assignment_next
from review.services.reviewing import (
    LabelBase,
    LockedError,
    StaleLabelError,
    fix_request_create,
    fix_request_delete,
    label_save,
    review_submit,
)
from tests.review.helpers import added_line, complete_labels

pytestmark = pytest.mark.django_db


@pytest.fixture
def assignment(campaign, reviewer):
    return assignment_next(campaign=campaign, reviewer=reviewer)


def complete(assignment, tier="t1"):
    complete_labels(assignment, tier)


def test_it_saves_partial_labels_without_blanking_other_fields(assignment):
    c = assignment.candidates.first()
    label_save(candidate=c, values={"tier": "t2", "rank_in_tier": 1})
    label_save(candidate=c, values={"notes": "tidy"})
    label = Label.objects.get(candidate=c)
    assert (label.tier, label.rank_in_tier, label.notes) == ("t2", 1, "tidy")


def test_a_save_based_on_the_stored_label_goes_through_and_moves_the_base_along(assignment):
    c = assignment.candidates.first()
    first = label_save(candidate=c, values={"tier": "t2"}, base=LabelBase(updated_at=None))
    second = label_save(
        candidate=c, values={"rank_in_tier": 3}, base=LabelBase(updated_at=first.updated_at)
    )
    assert second.updated_at > first.updated_at
    label = Label.objects.get(candidate=c)
    assert (label.tier, label.rank_in_tier, label.updated_at) == ("t2", 3, second.updated_at)


def test_a_save_from_a_page_filled_before_the_last_save_is_refused_and_writes_nothing(
    assignment,
):
    """Two tabs of one review: each sends its whole form, so the one filled before the other
    saved would blank the rank and the pre-filled marks saved there."""
    c = assignment.candidates.first()
    before = label_save(candidate=c, values={"tier": "t1"})
    newer = label_save(
        candidate=c, values={"rank_in_tier": 1, "prefilled": ["confidence"], "confidence": 3}
    )
    for base in (LabelBase(updated_at=None), LabelBase(updated_at=before.updated_at)):
        with pytest.raises(StaleLabelError) as info:
            label_save(
                candidate=c,
                values={"rank_in_tier": None, "prefilled": [], "notes": "from the old tab"},
                base=base,
            )
        text = str(info.value)
        assert f"Candidate {c.alias}'s label was saved from another tab or window" in text
        assert "Reload the page" in text
    label = Label.objects.get(candidate=c)
    assert (label.rank_in_tier, label.prefilled, label.notes) == (1, ["confidence"], "")
    assert label.updated_at == newer.updated_at


def test_a_page_that_saw_no_label_is_refused_once_another_saved_one(assignment):
    c = assignment.candidates.first()
    label_save(candidate=c, values={"tier": "t3"}, base=LabelBase(updated_at=None))
    with pytest.raises(StaleLabelError):
        label_save(candidate=c, values={"tier": "t1"}, base=LabelBase(updated_at=None))
    assert Label.objects.get(candidate=c).tier == "t3"


def test_an_exploit_is_not_ranked(assignment):
    c = assignment.candidates.first()
    label = label_save(candidate=c, values={"tier": "exploit", "rank_in_tier": 2})
    assert label.rank_in_tier is None


def test_it_refuses_unknown_fields(assignment):
    with pytest.raises(ValidationError):
        label_save(candidate=assignment.candidates.first(), values={"agent_model": "x"})


def test_it_rejects_an_incomplete_group_listing_every_problem(assignment):
    label_save(candidate=assignment.candidates.first(), values={"tier": "t1"})
    with pytest.raises(ValidationError) as info:
        review_submit(assignment=assignment)
    assert len(info.value.messages) >= assignment.candidates.count()
    assignment.refresh_from_db()
    assert assignment.status == Assignment.Status.IN_PROGRESS


def test_not_mergeable_needs_a_blocking_fix_request(assignment):
    complete(assignment)
    c = assignment.candidates.order_by("position").first()
    label_save(candidate=c, values={"mergeability": "not_mergeable"})
    with pytest.raises(ValidationError, match="blocking"):
        review_submit(assignment=assignment)
    fix_request_create(
        candidate=c,
        **added_line(c),
        text="wrong",
        severity="blocking",
        criterion="implementation_precision",
    )
    assert review_submit(assignment=assignment).status == Assignment.Status.SUBMITTED


def test_it_locks_after_submission_and_rejects_a_second_submission(assignment):
    complete(assignment)
    review_submit(assignment=assignment)
    c = assignment.candidates.first()
    with pytest.raises(LockedError):
        label_save(candidate=c, values={"tier": "t3"})
    with pytest.raises(LockedError):
        review_submit(assignment=assignment)
    with pytest.raises(LockedError):
        fix_request_create(candidate=c, path="a", line=1, side="new", text="t", severity="nit")


def test_a_fix_request_can_be_deleted_before_submission(assignment):
    c = assignment.candidates.first()
    fix = fix_request_create(candidate=c, **added_line(c), text="t", severity="nit")
    fix_request_delete(fix_request=fix)
    assert not c.fix_requests.exists()


def test_the_database_checks_scores_and_tiers(assignment):
    from django.db import IntegrityError, transaction

    c = assignment.candidates.first()
    for bad in ({"approach_suitability": 6}, {"tier": "t4"}, {"confidence": 0}):
        with pytest.raises(IntegrityError), transaction.atomic():
            Label.objects.update_or_create(
                candidate=c, defaults={"updated_at": assignment.started_at, **bad}
            )
