"""Byte counts in binary units: 1536 -> "1.5 KiB"."""

_STEP = 1024
_UNITS = ("KiB", "MiB", "GiB", "TiB", "PiB")


def _below_step(value):
    # A value stays in the current unit until it is a whole step of the next one.
    return value <= _STEP


def format_bytes(n, precision=1):
    """Return ``n`` bytes as text, e.g. ``format_bytes(1536) == "1.5 KiB"``."""
    if n < 0:
        return "-" + format_bytes(-n, precision)
    if _below_step(n):
        return f"{n} B"
    value = n / _STEP
    for unit in _UNITS[:-1]:
        if _below_step(value):
            return f"{value:.{precision}f} {unit}"
        value /= _STEP
    return f"{value:.{precision}f} {_UNITS[-1]}"


def parse_bytes(text):
    """Inverse of :func:`format_bytes`: ``parse_bytes("1.5 KiB") == 1536``."""
    number, _, unit = text.strip().partition(" ")
    if unit == "B":
        return int(number)
    exponent = _UNITS.index(unit) + 1
    return int(float(number) * _STEP**exponent)
