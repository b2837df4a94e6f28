"""Small display filters for the review templates (plain text in, plain text out)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from django import template
from django.utils.html import format_html_join
from django.utils.safestring import SafeString

from grading.domain.hostile_text import mixed_scripts
from grading.domain.hostile_text import visible as _visible
from grading.models import Run
from grading.selectors.synthetic import run_is_synthetic
from review.stats import MIN_TASKS_FOR_INTERVAL, TOO_FEW_TASKS, interval_shown

if TYPE_CHECKING:
    from review.blinded_cache import HunkShare

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


@register.simple_tag
def shared_hunk_items(shares: Iterable[HunkShare]) -> SafeString:
    """The items of a candidate's shared-changes list, one per hunk: built here rather than by
    a loop in the template, whose dozen lookups per item made this list (hundreds of hunks a
    candidate in a big group) cost more than all the rest of a panel's templates. Every value
    is escaped by `format_html_join`, as the template escaped it."""
    return format_html_join(
        "",
        '<li class="{}" data-path="{}" data-line="{}" data-side="old"><a href="#" data-goto>'
        '{}:{}</a> <span class="rv-badge">{}</span></li>',
        (
            (
                "is-unique" if s.unique else "is-common" if s.common else "",
                s.path,
                s.line,
                visible(s.path),
                s.line,
                "only this one" if s.unique else f"{s.holders}/{s.total}",
            )
            for s in shares
        ),
    )
