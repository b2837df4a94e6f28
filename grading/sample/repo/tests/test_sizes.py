import pytest

from humanize_lite import format_bytes, parse_bytes


def test_zero_bytes():
    assert format_bytes(0) == "0 B"


def test_small_counts_stay_in_bytes():
    assert format_bytes(1) == "1 B"
    assert format_bytes(1023) == "1023 B"


def test_kibibytes():
    assert format_bytes(1536) == "1.5 KiB"
    assert format_bytes(10 * 1024) == "10.0 KiB"


def test_mebibytes():
    assert format_bytes(5 * 1024**2) == "5.0 MiB"


def test_precision():
    assert format_bytes(1536, precision=2) == "1.50 KiB"


def test_negative_sizes():
    assert format_bytes(-2048) == "-2.0 KiB"


def test_exactly_one_kib():
    assert format_bytes(1024) == "1.0 KiB"


def test_exactly_one_mib():
    assert format_bytes(1024**2) == "1.0 MiB"


def test_exactly_one_gib():
    assert format_bytes(1024**3) == "1.0 GiB"


def test_parse_round_trip():
    assert parse_bytes("1.5 KiB") == 1536
    assert parse_bytes("512 B") == 512


def test_parse_rejects_unknown_units():
    with pytest.raises(ValueError):
        parse_bytes("3 XB")
