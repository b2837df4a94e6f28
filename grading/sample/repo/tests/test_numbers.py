from humanize_lite import intcomma, ordinal


def test_intcomma_groups_thousands():
    assert intcomma(1234567) == "1,234,567"
    assert intcomma(999) == "999"


def test_ordinals():
    assert [ordinal(n) for n in (1, 2, 3, 4, 11, 12, 13, 21, 102)] == [
        "1st", "2nd", "3rd", "4th", "11th", "12th", "13th", "21st", "102nd",
    ]
