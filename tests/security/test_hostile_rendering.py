"""Hostile text shown and exported: control and bidi characters visible everywhere text is
shown, ANSI colour stripped from test output, names mixing alphabets warned about, and CSV
cells that would run as formulas neutralised (JSON Lines keeps them as they are)."""

from __future__ import annotations

import copy
import io
import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.test import Client
from django.urls import reverse
from hypothesis import given
from hypothesis import strategies as st

from gagar_site.inert_text import InertTextMiddleware
from grading.diffs import parse_patch
from grading.domain.hostile_text import (
    BIDI,
    ZERO_WIDTH,
    csv_cell,
    html_needs_visible,
    mixed_script_words,
    mixed_scripts,
    strip_ansi,
    visible,
    visible_html,
)
from grading.grader.tool_output import mixed_script_note
from grading.services.advantages import AdvantageParams
from grading.services.exports import TableWriter, advantages_export
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


def test_words_that_mix_alphabets_are_named_and_ordinary_words_are_not():
    assert mixed_script_words("x = l\u0430bel_id + label") == ["l\u0430bel_id"]
    assert mixed_script_words("p\u0430yp\u0430l = 1; p\u0430yp\u0430l()") == ["p\u0430yp\u0430l"]
    # Each word in one alphabet, or Japanese mixing its own scripts: nothing to warn about.
    ordinary = "naïve = 'Ελληνικά' + user_名前 + 'テスト日本語のテキスト' + Straße + 한국어"
    assert mixed_script_words(ordinary) == [] and mixed_script_words("plain_ascii") == []
    assert mixed_scripts("docs/\u0441opy.md") and not mixed_scripts("docs/copy.md")


def test_an_html_page_gets_visible_marks_in_its_text_only():
    page = (
        '<p title="a\u202eb" data-path="src/\u202ex.py">name \u202ex.py \x1b[1m</p>'
        "<textarea>keep\u202e</textarea><script>var s='\u202e';</script><!-- \u200b -->"
        "<pre>line\r\nnext\x00</pre>"
    )
    shown = visible_html(page)
    assert '<p title="a\u202eb" data-path="src/\u202ex.py">' in shown  # attributes: as they are
    assert "name ⟨U+202E⟩x.py ␛[1m</p>" in shown
    assert "<textarea>keep\u202e</textarea><script>var s='\u202e';</script>" in shown
    assert "<!-- \u200b -->" in shown and "<pre>line\r\nnext␀</pre>" in shown
    assert visible_html("<p>plain</p>") == "<p>plain</p>"


@given(st.text(alphabet=st.sampled_from("a<>\r\n\t\x00\x1b\x7f\x85\xa0é€" + BIDI + ZERO_WIDTH)))
def test_the_fast_byte_scan_agrees_with_the_text_rule(text: str) -> None:
    # Any character a page's text would show as a mark (a CR is a plain line break there).
    plain = text.replace("\r", "")
    assert html_needs_visible(text.encode()) == (visible(plain) != plain)
    if visible_html(text) != text:
        assert html_needs_visible(text.encode())


def test_the_middleware_rewrites_html_text_and_leaves_data_alone():
    def through(response: HttpResponse) -> bytes:
        out = InertTextMiddleware(lambda request: response)(HttpRequest())
        assert isinstance(out, HttpResponse)
        return out.content

    hostile = '<p data-x="\u202e">\x1b\u202e</p>'
    html = through(HttpResponse(hostile, content_type="text/html; charset=utf-8"))
    assert html.decode() == '<p data-x="\u202e">␛⟨U+202E⟩</p>'
    for kind in ("text/csv", "text/plain", "application/json"):
        assert through(HttpResponse(hostile, content_type=kind)).decode() == hostile
    assert through(JsonResponse({"t": "\x1b"})) == b'{"t": "\\u001b"}'


def test_the_graders_file_list_warns_of_names_mixing_alphabets():
    patch = parse_patch(
        "diff --git a/src/l\u0430bel.py b/src/l\u0430bel.py\nnew file mode 100644\n"
        "--- /dev/null\n+++ b/src/l\u0430bel.py\n@@ -0,0 +1,2 @@\n+ok = 1\n+p\u0430th = 2\n"
    )
    note = mixed_script_note("B", patch)
    assert note.startswith("[warning: look-alike letters") and "candidate B" in note
    assert "the name of file 1" in note and "added line 2 of file 1" in note
    assert "l\u0430bel" not in note  # untrusted text stays inside <untrusted> blocks
    assert mixed_script_note("A", parse_patch("--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n")) == ""


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


def test_every_text_column_of_a_csv_export_is_neutralised_and_parquet_keeps_values(
    tmp_path: Path,
) -> None:
    schema = pa.schema(
        [("id", pa.string()), ("note", pa.string()), ("n", pa.int64()), ("x", pa.float64())]
    )
    row = {"id": "=cmd|' /C calc'!A0", "note": "+SUM(1)", "n": -3, "x": -1.5}
    for fmt in ("csv", "jsonl", "parquet"):
        writer = TableWriter(tmp_path / f"t.{fmt}", fmt, schema)
        writer.write([row])
        writer.close(keep=True)
    assert (tmp_path / "t.csv").read_text().splitlines()[
        1
    ] == "'=cmd|' /C calc'!A0,'+SUM(1),-3,-1.5"
    assert json.loads((tmp_path / "t.jsonl").read_text()) == row
    assert pq.read_table(tmp_path / "t.parquet").to_pylist() == [row]
