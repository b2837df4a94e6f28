"""Hostile text shown and exported: control and bidi characters visible everywhere text is
shown, ANSI colour stripped from test output, names mixing alphabets warned about, and CSV
cells that would run as formulas neutralised (JSON Lines keeps them as they are)."""

from __future__ import annotations

import copy
import io
import json
from pathlib import Path

import pytest
from django.test import Client
from django.urls import reverse

from grading.domain.hostile_text import csv_cell, mixed_scripts, strip_ansi, visible
from grading.services.advantages import AdvantageParams
from grading.services.exports import advantages_export
from grading.services.imports import groups_import
from grading.services.sources import bundle_records
from review.models import Assignment
from review.services.campaigns import campaign_create
from tests.factories import StaffFactory, UserFactory
from tests.security.identity_marks import GROUP_ID, hostile_record
from tests.training.builders import config, grade, import_groups, step_group

RAW = ["\x1b", "\u202e", "\u2066", "\u200b", "\x85", "\x07"]


def test_ansi_sequences_are_stripped_and_controls_shown():
    assert strip_ansi("\x1b[1;31mFAILED\x1b[0m \x1b]0;title\x07ok \x1b[2K") == "FAILED ok "
    shown = visible("a\x1bb\u202ec\u200bd\x85e\x00f\tg\nh")
    assert not any(ch in shown for ch in [*RAW, "\x00"])
    assert "␛" in shown and "⟨U+202E⟩" in shown and "⟨U+200B⟩" in shown and "\t" in shown
    assert visible("plain text\n") == "plain text\n"


def test_names_that_mix_alphabets_in_one_word_are_flagged():
    assert mixed_scripts("src/l\u0430bel.py")  # Cyrillic а
    assert not mixed_scripts("src/label.py") and not mixed_scripts("docs/naïve.md")
    assert not mixed_scripts("日本/readme.py")


@pytest.mark.parametrize("text", ["=1+2", "+1", "-1", "@SUM(A1)", "\tx", "\rx"])
def test_formula_cells_get_a_quote(text):
    assert csv_cell(text) == "'" + text
    assert csv_cell("plain") == "plain" and csv_cell(-1.5) == -1.5


@pytest.mark.django_db
def test_the_review_page_shows_hostile_text_inert(client: Client) -> None:
    record = copy.deepcopy(hostile_record())
    hostile = "\x1b[31mred\x1b[0m \x1b]0;pwned\x07 \u202eevil\u202c \u200bzw \x1bESC"
    for a in record["attempts"]:
        a["test_output"] = f"FAILED {hostile}\n"
        a["trajectory"]["events"].append({"kind": "observation", "text": hostile})
        a["patch"] += (
            "diff --git a/src/l\u0430bel.py b/src/l\u0430bel.py\nnew file mode 100644\n"
            "--- /dev/null\n+++ b/src/l\u0430bel.py\n@@ -0,0 +1 @@\n+x = '\u202eabc'\n"
        )

    line = json.dumps(record).encode() + b"\n"
    _, records = bundle_records(stream=io.BytesIO(line), source="hostile", base_dir=None)
    groups_import(records=records)
    reviewer = UserFactory.create(username="alice")
    campaign = campaign_create(
        name="Hostile text",
        created_by=StaffFactory.create(username="lead"),
        reviewers=[reviewer],
        filters={},
    )
    client.force_login(reviewer)
    client.post(reverse("review:next", args=[campaign.pk]))
    mine = Assignment.objects.get(reviewer=reviewer, group__external_id=GROUP_ID)
    bodies = [client.get(reverse("review:page", args=[mine.pk])).content.decode()]
    for c in mine.candidates.all():
        traj = reverse("review:trajectory", args=[mine.pk, c.token])
        bodies.append(client.get(traj, HTTP_X_FRAGMENT="1").content.decode())
    text = "".join(bodies)
    assert [ch for ch in RAW if ch in text] == []
    assert "FAILED" in text and "red" in text and "␛" in text and "⟨U+202E⟩" in text
    assert "mixes alphabets" in text


@pytest.mark.django_db
def test_csv_exports_neutralise_formulas_and_jsonl_keeps_them(tmp_path: Path) -> None:
    cfg = config()
    groups = import_groups(step_group('=HYPERLINK("http://x")'), step_group("@SUM(A1)"))
    for g in groups:
        grade(g, cfg, {"p1": (1, 1), "p2": (2, 1)})
    for fmt in ("csv", "jsonl"):
        advantages_export(
            run_name="run-1",
            step=None,
            fmt=fmt,
            out_dir=tmp_path / fmt,
            config=cfg,
            params=AdvantageParams(),
        )
    csv_text = "".join(p.read_text() for p in (tmp_path / "csv").glob("*.csv"))
    jsonl_text = "".join(p.read_text() for p in (tmp_path / "jsonl").glob("*.jsonl"))
    assert "'=HYPERLINK" in csv_text and "'@SUM(A1)" in csv_text
    assert ",=HYPERLINK" not in csv_text and ',"=HYPERLINK' not in csv_text
    assert '"=HYPERLINK' in jsonl_text.replace('\\"', '"') and '"@SUM(A1)"' in jsonl_text
