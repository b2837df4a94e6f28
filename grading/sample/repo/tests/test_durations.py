import pytest

from humanize_lite import format_duration


def test_zero_seconds():
    assert format_duration(0) == "0s"


def test_hours_minutes_seconds():
    assert format_duration(3725) == "1h 2m 5s"


def test_leaves_out_zero_parts():
    assert format_duration(86400 + 5) == "1d 5s"


def test_rejects_negative_durations():
    with pytest.raises(ValueError):
        format_duration(-1)
