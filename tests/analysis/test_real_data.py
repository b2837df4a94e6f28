"""The engine on the real reviewed groups: loading, the shipped fit, verdicts the service takes."""

import json
from pathlib import Path

import pytest

from grading.diffs import parse_patch
from grading.grader.analysis.devset import DevsetError, load
from grading.grader.analysis.engine import analyse_group
from grading.grader.analysis.fit_default import make_fit
from grading.grader.analysis.inputs import AnalysisInput, CandidatePatch
from grading.grader.analysis.model import load_default_fit
from grading.grader.analysis.verdict import to_verdict
from grading.grader.inputs import Rubric
from grading.grader.verdict import schema_errors
from grading.grader.verdict_check import VerdictContext, check_verdict
from review.analysis_fit import held_out_figures

SAMPLE = Path(__file__).resolve().parents[2] / "grading" / "sample"


_TASKS: dict[Path, list] = {}


@pytest.fixture
def tasks(shared_data):
    if shared_data not in _TASKS:
        _TASKS[shared_data] = load(shared_data)
    return _TASKS[shared_data]


def test_it_joins_the_reviews_to_the_distinct_resolved_patches(tasks) -> None:
    assert len(tasks) == 16
    assert sum(len(t.patches) for t in tasks) == 63
    for t in tasks:
        assert set(t.labels) == {"rater-1", "rater-2"}
        assert all(set(by_sha) == set(t.patches) for by_sha in t.labels.values())


def test_it_reports_file_line_and_field_for_bad_review_files(shared_data, tmp_path: Path) -> None:
    (tmp_path / "reviews").mkdir()
    (tmp_path / "groups.jsonl").write_text((shared_data / "groups.jsonl").read_text())
    row = json.loads((shared_data / "reviews" / "rater-1.jsonl").read_text().splitlines()[0])
    row["candidates"][0]["patch_sha256"] = "0" * 64
    (tmp_path / "reviews" / "rater-1.jsonl").write_text("\n" + json.dumps(row) + "\n")
    with pytest.raises(
        DevsetError,
        match=r"rater-1.jsonl:2: \$\.candidates\[0\]\.patch_sha256: 000000000000… is no",
    ):
        load(tmp_path)
    row = json.loads((shared_data / "reviews" / "rater-1.jsonl").read_text().splitlines()[0])
    del row["candidates"][1]["tier"]
    (tmp_path / "reviews" / "rater-1.jsonl").write_text(json.dumps(row) + "\n")
    with pytest.raises(
        DevsetError, match=r"rater-1.jsonl:1: \$\.candidates\[1\]\.tier: must be a whole number"
    ):
        load(tmp_path)
    (tmp_path / "reviews" / "rater-1.jsonl").write_text("{broken\n")
    with pytest.raises(DevsetError, match=r"rater-1.jsonl:1: not valid JSON"):
        load(tmp_path)


@pytest.mark.slow
def test_the_shipped_fit_is_reproduced_by_its_command(tasks) -> None:
    assert make_fit(tasks, held_out_figures).same_as(load_default_fit())


def test_verdicts_resolve_from_the_diffs_alone(tasks) -> None:
    for t in tasks:
        for reference in (True, False):
            res = analyse_group(t.analysis_input(reference=reference))
            aliases = {k: chr(ord("A") + i) for i, k in enumerate(sorted(t.patches))}
            verdict = to_verdict(res, aliases)
            assert schema_errors(verdict) == []
            ctx = VerdictContext(
                aliases=list(aliases.values()),
                passing=frozenset(aliases.values()),
                rubric=Rubric(),
                diffs={aliases[k]: parse_patch(p) for k, p in t.patches.items()},
                trajectory_lengths={},
            )
            assert [str(p) for p in check_verdict(verdict, ctx)] == [], t.instance_id


def test_junk_scripts_reach_t3_and_reference_twins_t1(tasks) -> None:
    by_id = {t.instance_id: t for t in tasks}
    res = analyse_group(by_id["django__django-11099"].analysis_input())
    tiers = sorted(c.tier for c in res.candidates.values())
    assert tiers == [1, 1, 3, 3]
    assert all(c.severe[0].feature == "junk_files" for c in res.candidates.values() if c.tier == 3)


def test_the_sample_group_keeps_its_designed_outcome() -> None:
    group = json.loads((SAMPLE / "group.jsonl").read_text().splitlines()[0])
    task = group["task"]
    repo = SAMPLE / "repo"

    def read(path: str) -> str | None:
        file = repo / path
        return file.read_text() if file.is_file() else None

    passing = [a for a in group["attempts"] if a["status"] == "valid" and a["test_reward"] == 1]
    res = analyse_group(AnalysisInput(
        [CandidatePatch(a["id"], a["patch"]) for a in passing], task["gold_patch"] or None,
        task["problem_statement"], task["test_patch"],
        tuple(task["fail_to_pass"]) + tuple(task["pass_to_pass"]), read,
    ))  # fmt: skip
    c = res.candidates
    assert c["a1"].tier == 1 and c["a3"].tier == 1  # the minimal root-cause fixes
    for key in ("a5", "a6"):  # hard-coding the failing tests' values; rewriting the tests
        assert c[key].tier == 3 and c[key].exploit_suspected
    assert {s.category for s in c["a5"].severe} >= {"hardcoding"}
    assert {s.category for s in c["a6"].severe} >= {"test_tampering"}
    assert res.ordering[0] in ("a1", "a3")


def test_real_unreviewed_groups_keep_a_deeper_fix_and_a_type_hint_out_of_t3(shared_data) -> None:
    """Two groups the dev set does not review, as they come: in seaborn-3010 every resolved fix
    drops the missing rows in `_fit_predict`, the method the reference's `__call__` hands to
    `groupby.apply`; in pytest-11143 seven re-annotate `is_rewrite_disabled(docstring: str)`
    (`Optional[str]`, `Union[str, int]`, `object`, none). Neither is leaving the reference's
    function untouched or an API break: both made every such candidate T3 before."""
    groups = {t.instance_id: t for t in load(shared_data, reviewed_only=False)}
    res = analyse_group(groups["mwaskom__seaborn-3010"].analysis_input())
    assert len(res.candidates) == 7
    for c in res.candidates.values():
        found = {x.feature for x in c.contributions}
        assert "target_uncovered" not in found and "off_target" in found
        assert c.tier < 3
    group = groups["pytest-dev__pytest-11143"]
    res = analyse_group(group.analysis_input())
    old_def = "-    def is_rewrite_disabled(docstring: str)"
    hinted = [k for k, text in group.patches.items() if old_def in text]
    assert len(hinted) == 7
    for key in hinted:
        assert "signature_changed" not in {x.feature for x in res.candidates[key].contributions}
