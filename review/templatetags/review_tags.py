"""Small display filters for the review templates (plain text in, plain text out)."""

from __future__ import annotations

from django import template

from grading.domain.hostile_text import visible as _visible

register = template.Library()


@register.filter
def visible(text: str) -> str:
    """Control, bidi and zero-width characters shown as marks (a file name with an RLO in it
    must not reorder the text around it)."""
    return _visible(str(text or ""))


@register.filter
def words(key: str) -> str:
    """`minimality_of_changes` → `minimality of changes`."""
    return str(key or "").replace("_", " ")


@register.filter
def duration(ms: int | None) -> str:
    """Milliseconds as `42 s`, `3 min 05 s` or `1 h 02 min`."""
    seconds = int((ms or 0) // 1000)
    if seconds < 60:
        return f"{seconds} s"
    minutes, seconds = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes} min {seconds:02d} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes:02d} min"
