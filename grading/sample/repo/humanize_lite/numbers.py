"""Large and ordinal numbers: 1234567 -> "1,234,567", 3 -> "3rd"."""


def intcomma(n):
    """Group the digits of an integer in threes with commas."""
    return f"{int(n):,}"


def ordinal(n):
    """Return 1 -> "1st", 2 -> "2nd", 11 -> "11th", 23 -> "23rd"."""
    if 10 <= n % 100 <= 20:
        suffix = "th"
    else:
        suffix = {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"
