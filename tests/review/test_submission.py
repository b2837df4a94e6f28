"""Whole-group validation rules (pure)."""

from review.submission import CandidateDraft, submission_problems

FULL = (4, 4, 4, 4, 4)


def draft(alias, tier="t1", rank=1, scores=FULL, merge="as_is", blocking=0):
    return CandidateDraft(alias, tier, rank, scores, merge, blocking)


def test_it_accepts_a_complete_group_with_ties():
    drafts = [
        draft("A"),
        draft("B"),
        draft("C", rank=2),
        draft("D", "t3"),
        draft("E", "exploit", None),
    ]
    assert submission_problems(drafts, rubric_required=True) == []


def test_it_needs_a_tier_for_every_candidate():
    problems = submission_problems([draft("A"), draft("B", tier="")], rubric_required=True)
    assert problems == ["B: choose a tier."]


def test_it_rejects_gaps_in_ranks():
    problems = submission_problems([draft("A"), draft("B", rank=3)], rubric_required=True)
    assert any("T1: ranks must run" in p for p in problems)


def test_it_needs_a_rank_within_a_tier():
    problems = submission_problems([draft("A", rank=None)], rubric_required=True)
    assert problems == ["A: give a rank within T1."]


def test_not_mergeable_needs_a_blocking_fix_request():
    bad = submission_problems([draft("A", merge="not_mergeable")], rubric_required=True)
    ok = submission_problems([draft("A", merge="not_mergeable", blocking=1)], rubric_required=True)
    assert bad and "blocking fix request" in bad[0]
    assert ok == []


def test_rubric_is_checked_only_when_required():
    partial = draft("A", scores=(4, None, 4, 4, 4))
    assert submission_problems([partial], rubric_required=True)
    assert submission_problems([partial], rubric_required=False) == []


def test_it_needs_mergeability():
    assert submission_problems([draft("A", merge="")], rubric_required=True) == [
        "A: say whether it can be merged."
    ]
