"""Durations in seconds as short text: 3725 -> "1h 2m 5s"."""

_PARTS = (("d", 86400), ("h", 3600), ("m", 60), ("s", 1))


def format_duration(seconds):
    """Return a whole number of seconds as "1d 2h 3m 4s", leaving out zero parts."""
    if seconds < 0:
        raise ValueError("duration must not be negative")
    if seconds == 0:
        return "0s"
    parts = []
    remaining = int(seconds)
    for suffix, size in _PARTS:
        count, remaining = divmod(remaining, size)
        if count:
            parts.append(f"{count}{suffix}")
    return " ".join(parts)
