"""Small display filters for the review templates (plain text in, plain text out)."""

from __future__ import annotations

from typing import Any

from django import template

from grading.domain.hostile_text import mixed_scripts
from grading.domain.hostile_text import visible as _visible
from grading.models import Run
from grading.selectors.synthetic import run_is_synthetic
from review.stats import MIN_TASKS_FOR_INTERVAL, TOO_FEW_TASKS, interval_shown

register = template.Library()


@register.filter
def visible(text: str) -> str:
    """Control, bidi and zero-width characters shown as marks (a file name with an RLO in it
    must not reorder the text around it)."""
    return _visible(str(text or ""))


@register.filter
def mixes_alphabets(name: str) -> bool:
    """Whether a file name has a word mixing alphabets (`lаbel.py` with a Cyrillic а)."""
    return mixed_scripts(str(name or ""))


@register.filter
def ci_interval(ci: Any, digits: int = 2) -> str:
    """A CI dict (low, high, n_tasks) as "[0.12, 0.50]", or why there is no interval."""
    if not isinstance(ci, dict):
        return "—"
    n_tasks = int(ci.get("n_tasks") or 0)
    low, high = ci.get("low"), ci.get("high")
    if n_tasks < MIN_TASKS_FOR_INTERVAL:
        return TOO_FEW_TASKS
    if not interval_shown(n_tasks, low, high):
        return "no interval"
    return f"[{low:.{digits}f}, {high:.{digits}f}]"


@register.filter
def ci_label(ci: Any, digits: int = 3) -> str:
    """As `ci_interval`, naming the interval: "95% CI [0.12, 0.50]"."""
    text = ci_interval(ci, digits)
    return f"95% CI {text}" if text.startswith("[") else text


@register.filter
def words(key: str) -> str:
    """`minimality_of_changes` → `minimality of changes`."""
    return str(key or "").replace("_", " ")


# The tab labels the page script writes after a save (autosave.js TIER_NAMES): a reload must
# show the same short text, not "exploit / test tampering", which wrapped the tabs to two rows.
TIER_SHORT = {"t1": "T1", "t2": "T2", "t3": "T3", "exploit": "exploit"}


@register.filter
def tier_short(tier: str) -> str:
    return TIER_SHORT.get(tier or "", "")


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


@register.filter
def synthetic_run(run: Run) -> bool:
    """Whether a run (a page's group's `step.run`, already read) is demo data."""
    return run_is_synthetic(run)
