"""The project's corpus of hostile text (terminal escapes, C0/C1 controls, bidi overrides,
zero-width characters, names mixing alphabets), a group that carries it in every text a page
shows, and the check that a page shows none of it raw.

Ids stay plain (the importer refuses control characters in ids): the text goes where content
goes — file names, hunk headings, code, trajectories, test output and report, the problem
statement, agent metadata, reviewers' notes and fix requests, the grader's words.
"""

from __future__ import annotations

import copy
import io
import json
from html.parser import HTMLParser
from typing import Any

from django.test import Client
from django.urls import reverse
from django.utils import timezone

from grading.domain.hostile_text import BIDI, ZERO_WIDTH
from grading.models import GraderConfig, GraderRun, Group
from grading.services.imports import groups_import
from grading.services.sources import bundle_records
from review.models import Assignment, Campaign, Disagreement
from review.services.campaigns import campaign_create
from review.services.reviewing import fix_request_create, label_save
from tests.factories import StaffFactory, UserFactory
from tests.security.identity_marks import hostile_record

GROUP_ID = "hostile-text-group"
# Every character that must never reach a page's text raw (CR and tab are whitespace there).
RAW = (
    [chr(i) for i in range(32) if chr(i) not in "\t\n\r"]
    + [chr(i) for i in range(0x7F, 0xA0)]
    + list(BIDI + ZERO_WIDTH)
)
# Colour in test output is stripped: "[35;1m" must not show up even as "␛[35;1m".
ANSI_TEST_OUTPUT = "\x1b[35;1m"
HOSTILE = (
    "\x1b[31mred\x1b[0m \x1b]0;pwned\x07 \x1b[2J\x1bc \u202eevil\u202c \u2066iso\u2069 "
    "zw\u200bsp\u200d\ufeff shy\u00ad \x85nel \x9b1m \x08bs \x7fdel \x00nul \x0bvt \x1bESC"
)
MIXED_FILE = "src/l\u0430bel.py"  # a Cyrillic а
MIXED_WORD = "l\u0430bel_id"
BIDI_FILE = "src/evil\u202eyp.txt"
CONTROL_FILE = "src/esc\x1b[31mred.py"


def _text(text: str) -> str:
    """A text field: PostgreSQL's text columns refuse NUL."""
    return text.replace("\x00", "")


def _patch(n: int) -> str:
    hostile = HOSTILE.replace("\x00", "")
    return (
        f"diff --git a/{MIXED_FILE} b/{MIXED_FILE}\nnew file mode 100644\n--- /dev/null\n"
        f"+++ b/{MIXED_FILE}\n@@ -0,0 +1,2 @@\n+{MIXED_WORD} = '{hostile}'\n"
        f'+access_level{n} = "user\u202e \u2066// admin\u2069\u2066"\n'
        f"diff --git a/{BIDI_FILE} b/{BIDI_FILE}\nnew file mode 100644\n--- /dev/null\n"
        f"+++ b/{BIDI_FILE}\n@@ -0,0 +1 @@\n+x\u200by = {n}\n"
        f"diff --git a/{CONTROL_FILE} b/{CONTROL_FILE}\n--- a/{CONTROL_FILE}\n"
        f"+++ b/{CONTROL_FILE}\n@@ -10,2 +10,3 @@ def f\x1b[31m\u202e(): \x85\n"
        f" a = 1\n+b = {n}\n c = 3\n"
    )


def hostile_text_record() -> dict[str, Any]:
    record = copy.deepcopy(hostile_record())
    record["group_id"] = GROUP_ID
    record["run"] = "hostile-text-run"
    record["task"]["id"] = "hostile-text-task"
    record["task"]["problem_statement"] = _text(f"Problem: {HOSTILE}\n")
    for n, a in enumerate(record["attempts"]):
        a["id"] = f"hostile-text-{n}"
        a["patch"] = _patch(n)
        a["test_output"] = f"FAILED {ANSI_TEST_OUTPUT}boom\x1b[0m {HOSTILE}\n"
        a["test_report"]["FAIL_TO_PASS"]["failure"] = [_text(f"tests/t.py::test_{HOSTILE}")]
        a["test_report"]["harness"] = _text(HOSTILE)
        a["agent"]["metadata"] = {"note": _text(HOSTILE)}
        a["trajectory"]["events"] = [
            {"kind": "observation", "text": _text(f"out {HOSTILE}")},
            {"kind": "action", "tool": _text(f"bash{HOSTILE}"), "args": _text(HOSTILE)},
        ]
    return record


def hostile_text_import() -> Group:
    line = json.dumps(hostile_text_record()) + "\n"
    _, records = bundle_records(stream=io.BytesIO(line.encode()), source="hostile", base_dir=None)
    report = groups_import(records=records)
    assert not report.problems, report.problems
    return Group.objects.get(external_id=GROUP_ID)


def hostile_grader_run(group: Group) -> GraderRun:
    """A succeeded grader run whose words and transcript quote the hostile text."""
    config, _ = GraderConfig.objects.get_or_create(
        name="hostile-text-grader", defaults={"backend": "heuristic", "model": "grader-m"}
    )
    passing = [a for a in group.attempts.order_by("index") if a.passed]
    run = GraderRun.objects.create(
        group=group,
        config=config,
        status=GraderRun.Status.SUCCEEDED,
        verdict={"candidates": {str(a.pk): {"tier": 1} for a in passing}},
    )
    for n, a in enumerate(passing):
        run.grades.create(
            attempt=a,
            tier=1,
            rank_in_tier=n + 1,
            weighted_score=4.0,
            scores={"correctness": {"score": 4, "rationale": _text(HOSTILE)}},
            severe_issues=[{"category": "other", "description": _text(HOSTILE)}],
            summary=_text(f"summary {HOSTILE}"),
        )
    run.events.create(seq=0, kind="tool_call", name="view_diff", output=_text(HOSTILE))
    return run


def hostile_text_world() -> tuple[Assignment, Disagreement, GraderRun]:
    """The group in a campaign: its reviewer took it, labelled a candidate and asked for a fix
    with hostile text, then flagged a disagreement with the grader's hostile run."""
    group = hostile_text_import()
    run = hostile_grader_run(group)
    reviewer = UserFactory.create(username="alice")
    campaign = campaign_create(
        name="Hostile text",
        created_by=StaffFactory.create(username="lead", is_superuser=True),
        reviewers=[reviewer],
        filters={},
        reveal_policy=Campaign.Reveal.AFTER_SUBMISSION,
    )
    client = Client()
    client.force_login(reviewer)
    client.post(reverse("review:next", args=[campaign.pk]))
    assignment = Assignment.objects.get(reviewer=reviewer)
    candidate = assignment.candidates.order_by("position").first()
    assert candidate is not None
    label_save(candidate=candidate, values={"tier": "t2", "notes": _text(HOSTILE)})
    fix_request_create(
        candidate=candidate,
        path=MIXED_FILE,
        line=1,
        side="new",
        text=_text(HOSTILE),
        severity="nit",
    )
    flag = Disagreement.objects.create(
        candidate=candidate, grader_run=run, note=_text(HOSTILE), created_at=timezone.now()
    )
    return assignment, flag, run


class _Text(HTMLParser):
    """A page's text as a browser shows it: text nodes outside scripts, styles and textareas
    (whose contents are data and form values), plus tooltips."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self._hidden = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in ("script", "style", "textarea"):
            self._hidden += 1
        self.parts += [v or "" for k, v in attrs if k in ("title", "alt", "placeholder")]

    def handle_endtag(self, tag: str) -> None:
        if tag in ("script", "style", "textarea") and self._hidden:
            self._hidden -= 1

    def handle_data(self, data: str) -> None:
        if not self._hidden:
            self.parts.append(data)


def shown_text(html: str) -> str:
    parser = _Text()
    parser.feed(html)
    parser.close()
    return "".join(parser.parts)


# The same in a browser (`page.evaluate`): text nodes outside scripts, styles and textareas,
# and tooltips.
SHOWN_TEXT_JS = """() => {
  const out = [];
  const walk = document.createTreeWalker(document.documentElement, NodeFilter.SHOW_TEXT);
  while (walk.nextNode()) {
    const parent = walk.currentNode.parentElement;
    if (!parent || !parent.closest("script, style, textarea")) out.push(walk.currentNode.data);
  }
  for (const el of document.querySelectorAll("[title]")) out.push(el.title);
  return out.join("\\n");
}"""


def raw_in(text: str) -> list[str]:
    """The hostile characters `text` holds raw, as U+XXXX names."""
    return sorted({f"U+{ord(ch):04X}" for ch in text if ch in RAW})
