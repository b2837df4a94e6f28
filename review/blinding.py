"""Blinding, pure: per-reviewer aliases and order, and fingerprint redaction.

No Django here (an import contract keeps it so): the services pass in the attempt metadata and
configured patterns, and get back aliases and a redacting function.

Fingerprints are the names that would tell a reviewer who produced a candidate: the agent
system, model and family recorded on the group's own attempts (e.g. "swe-loop/run-7",
"coder-large-2026-03", "swe-loop"), plus configured regular expressions. A system name like
"patchsmith/0.4.2" also yields its name part "patchsmith"; parts without letters (versions) are
dropped, and so are parts shorter than `MIN_FINGERPRINT`, which would redact ordinary words.
"""

from __future__ import annotations

import hashlib
import random
import re
import string
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

REDACTED = "[redacted]"
MIN_FINGERPRINT = 3
_PART_SPLIT = re.compile(r"[/@:\s]+")
_ALNUM_RUN = re.compile(r"[A-Za-z0-9]+")
# Between the alphanumeric runs of a name we accept any one separator or none, so
# "swe-loop" also matches "swe_loop", "swe loop", "SWE.loop" and "sweloop".
_SEP = r"[-_ ./]?"


def alias_for(index: int) -> str:
    """A, B, …, Z, AA, AB, … (spreadsheet columns), 0-based."""
    letters = string.ascii_uppercase
    out = ""
    n = index + 1
    while n:
        n, rem = divmod(n - 1, 26)
        out = letters[rem] + out
    return out


def draw_order[T](items: Sequence[T], rng: random.Random) -> list[tuple[str, T]]:
    """A fresh shuffle of `items`, aliased in display order: the first shown is A.

    Both the order and which item gets which alias are private to one assignment, so two
    reviewers comparing notes ("B was best") cannot tell whether they mean the same candidate.
    """
    shuffled = list(items)
    rng.shuffle(shuffled)
    return [(alias_for(i), item) for i, item in enumerate(shuffled)]


def fingerprints_from(values: Iterable[str]) -> list[str]:
    """Distinct names to redact, longest first (so a long name wins over its own part)."""
    found: set[str] = set()
    for value in values:
        value = (value or "").strip()
        candidates = [value, *_PART_SPLIT.split(value)]
        for cand in candidates:
            cand = cand.strip(" -_./")
            if len(cand) >= MIN_FINGERPRINT and any(c.isalpha() for c in cand):
                found.add(cand.lower())
    return sorted(found, key=lambda s: (-len(s), s))


def _name_pattern(name: str) -> str | None:
    runs = _ALNUM_RUN.findall(name)
    if not runs:
        return None
    return _SEP.join(re.escape(r) for r in runs)


@dataclass(frozen=True)
class Redactor:
    """Replaces fingerprints by `[redacted]`; `digest` identifies the rule set for cache keys."""

    pattern: re.Pattern[str] | None
    digest: str

    def __call__(self, text: str) -> str:
        if self.pattern is None or not text:
            return text
        return self.pattern.sub(REDACTED, text)

    def redact_obj(self, value: object) -> object:
        """Redact every string inside JSON-like data (dicts, lists), keys included."""
        if isinstance(value, str):
            return self(value)
        if isinstance(value, list):
            return [self.redact_obj(v) for v in value]
        if isinstance(value, dict):
            return {self(str(k)): self.redact_obj(v) for k, v in value.items()}
        return value


def build_redactor(names: Iterable[str], patterns: Iterable[str] = ()) -> Redactor:
    """One case-insensitive alternation of every name and configured pattern.

    Invalid configured patterns raise `re.error`: a typo must not silently disable blinding.
    """
    parts: list[str] = []
    for name in fingerprints_from(names):
        pat = _name_pattern(name)
        if pat:
            # Not inside a longer word: "openfix" in "reopenfixture" stays.
            parts.append(rf"(?<![A-Za-z0-9]){pat}(?![A-Za-z0-9])")
    for raw in patterns:
        raw = raw.strip()
        if raw:
            re.compile(raw)
            parts.append(f"(?:{raw})")
    digest = hashlib.sha256("\n".join(parts).encode()).hexdigest()[:16]
    if not parts:
        return Redactor(None, digest)
    return Redactor(re.compile("|".join(parts), re.IGNORECASE), digest)
