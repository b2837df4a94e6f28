"""Pure blinding: aliases and order (no database). Redaction: tests/redaction."""

import random

from hypothesis import given
from hypothesis import strategies as st

from review.blinding import alias_for, draw_order


def test_it_names_aliases_like_spreadsheet_columns():
    assert [alias_for(i) for i in (0, 1, 25, 26, 27, 51, 52)] == [
        "A",
        "B",
        "Z",
        "AA",
        "AB",
        "AZ",
        "BA",
    ]


@given(st.lists(st.integers(), max_size=40, unique=True), st.integers())
def test_it_draws_a_permutation_aliased_in_display_order(items, seed):
    drawn = draw_order(items, random.Random(seed))
    assert sorted(item for _, item in drawn) == sorted(items)
    assert [alias for alias, _ in drawn] == [alias_for(i) for i in range(len(items))]


def test_two_draws_usually_differ():
    items = list(range(8))
    orders = {tuple(i for _, i in draw_order(items, random.Random(s))) for s in range(20)}
    assert len(orders) > 10
